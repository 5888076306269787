#!/usr/bin/python3
"""Write a Hugging Face folder (Llama, Qwen2, Qwen3, LFM2, Qwen3.5) as an F16 GGUF file for llama.cpp.

Only for the speed comparison in bench/README.md: llama.cpp's own converter needs torch,
this needs numpy and the gguf-py package of a llama.cpp checkout, found through
--llama-cpp DIR, $LLAMA_CPP, or PYTHONPATH=DIR/gguf-py.

    /usr/bin/python3 bench/make_gguf.py MODEL_DIR -o MODEL.gguf --llama-cpp LLAMA_CPP_DIR

Matrices are written F16; norm weights, biases and rope factors F32, as llama.cpp's
converter writes them. The vocabulary comes from tokenizer.json, padded to vocab_size.

Qwen3.5 text models (model_type qwen3_5_text) are written as llama.cpp's qwen35
architecture the way its converter (conversion/qwen.py, class Qwen3_5TextModel)
writes them with --no-mtp: multi-token-prediction tensors (mtp.*) are left out.
"""

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

# Hugging Face tensor names below model.layers.N., and their GGUF names below blk.N.
LAYER_TENSORS = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
GLOBAL_TENSORS = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
# LFM2's own names below model.layers.N.
LFM2_LAYER_TENSORS = {
    "operator_norm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.out_proj": "attn_output",
    "self_attn.q_layernorm": "attn_q_norm",
    "self_attn.k_layernorm": "attn_k_norm",
    "conv.in_proj": "shortconv.in_proj",
    "conv.conv": "shortconv.conv",
    "conv.out_proj": "shortconv.out_proj",
    "ffn_norm": "ffn_norm",
    "feed_forward.w1": "ffn_gate",
    "feed_forward.w3": "ffn_up",
    "feed_forward.w2": "ffn_down",
}
LFM2_GLOBAL_TENSORS = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.embedding_norm.weight": "token_embd_norm.weight",  # llama.cpp's name for the final norm
    "lm_head.weight": "output.weight",
}
# Qwen3.5's names below model.layers.N. (with their suffix) and their GGUF names below blk.N.,
# from gguf-py/gguf/tensor_mapping.py and constants.py (MODEL_ARCH.QWEN35). The converter first
# renames linear_attn.dt_bias to linear_attn.dt_proj.bias (conversion/qwen.py, Qwen3NextModel);
# A_log maps to ssm_a with no suffix. The layer's second norm is post_attention_norm here, not
# ffn_norm (src/models/qwen35.cpp loads LLM_TENSOR_ATTN_POST_NORM).
QWEN35_LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    # full-attention layers; q_proj rows are per head [query | gate], kept as they are
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    # Gated DeltaNet layers
    "linear_attn.in_proj_qkv.weight": "attn_qkv.weight",
    "linear_attn.in_proj_z.weight": "attn_gate.weight",
    "linear_attn.in_proj_b.weight": "ssm_beta.weight",
    "linear_attn.in_proj_a.weight": "ssm_alpha.weight",
    "linear_attn.conv1d.weight": "ssm_conv1d.weight",
    "linear_attn.dt_bias": "ssm_dt.bias",
    "linear_attn.A_log": "ssm_a",
    "linear_attn.norm.weight": "ssm_norm.weight",
    "linear_attn.out_proj.weight": "ssm_out.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
# model_type in config.json -> (GGUF architecture, pre-tokenizer name llama.cpp knows).
ARCHS = {"llama": ("llama", "llama-bpe"), "qwen2": ("qwen2", "qwen2"), "qwen3": ("qwen3", "qwen2"),
         "lfm2": ("lfm2", "lfm2"), "qwen3_5_text": ("qwen35", None), "qwen3_5": ("qwen35", None)}
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def import_gguf(llama_cpp):
    if llama_cpp:
        sys.path.insert(0, str(Path(llama_cpp) / "gguf-py"))
    try:
        import gguf
    except ImportError:
        sys.exit("make_gguf: cannot import gguf: pass --llama-cpp DIR (a llama.cpp checkout), "
                 "set LLAMA_CPP, or put DIR/gguf-py on PYTHONPATH")
    return gguf


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def safetensors_files(model_dir):
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        return sorted({model_dir / f for f in read_json(index)["weight_map"].values()})
    return [model_dir / "model.safetensors"]


def load_safetensors(path):
    """Maps a safetensors file: {name: (dtype name, numpy view of the stored values)}."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    header_len = int(data[:8].view("<u8")[0])
    header = json.loads(bytes(data[8:8 + header_len]))
    start = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        if dtype not in SAFETENSORS_DTYPES:
            sys.exit(f"make_gguf: {path}: tensor {name}: dtype {dtype}, expected F32, F16 or BF16")
        begin, end = info["data_offsets"]
        raw = data[start + begin:start + end].view(SAFETENSORS_DTYPES[dtype])
        tensors[name] = (dtype, raw.reshape(info["shape"]))
    return tensors


def to_float(dtype, values):
    if dtype == "BF16":  # bf16 is the high half of an f32
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values


def gguf_name(hf_name, arch):
    globals_, layers = ((LFM2_GLOBAL_TENSORS, LFM2_LAYER_TENSORS) if arch == "lfm2"
                        else (GLOBAL_TENSORS, LAYER_TENSORS))
    if hf_name in globals_:
        return globals_[hf_name]
    parts = hf_name.split(".")  # model.layers.N.<module...>.weight|bias
    if parts[:2] != ["model", "layers"] or len(parts) < 5:
        return None
    module = layers.get(".".join(parts[3:-1]))
    return module and f"blk.{parts[2]}.{module}.{parts[-1]}"


def rope_permute(w, n_head):
    """Hugging Face stores q/k rows as two halves per head; llama.cpp's llama
    architecture rotates adjacent pairs, so the rows are interleaved."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(config, head_dim):
    """The per-frequency divisors of llama3 rope scaling (llama.cpp's rope_freqs tensor)."""
    scaling = config.get("rope_scaling") or {}
    if scaling.get("rope_type", scaling.get("type")) != "llama3":
        return None
    factor = scaling.get("factor", 8.0)
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    n_ctx_orig = scaling.get("original_max_position_embeddings", 8192)
    theta = config.get("rope_theta", 10000.0)
    factors = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * theta ** (i / head_dim)
        if wavelen < n_ctx_orig / high:
            factors.append(1.0)
        elif wavelen > n_ctx_orig / low:
            factors.append(factor)
        else:
            smooth = (n_ctx_orig / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def plan_tensors(model_dir, config, arch, head_dim):
    """[(gguf name, shape, dtype, function returning the array to write)] in file order."""
    plan = []
    factors = llama3_rope_factors(config, head_dim)
    if factors is not None:
        plan.append(("rope_freqs.weight", factors.shape, np.float32, lambda: factors))
    for path in safetensors_files(model_dir):
        for hf_name, (dtype, values) in load_safetensors(path).items():
            name = gguf_name(hf_name, arch)
            if name is None:
                sys.exit(f"make_gguf: {path}: tensor {hf_name}: no GGUF name for it")
            n_head = None
            if arch == "llama" and ".attn_q." in name:
                n_head = config["num_attention_heads"]
            elif arch == "llama" and ".attn_k." in name:
                n_head = config["num_key_value_heads"]
            # LFM2's depthwise kernel [C, 1, K] is stored [C, K], in f32.
            conv = ".shortconv.conv." in name
            shape = values.shape[::2] if conv else values.shape
            keep_f32 = len(shape) <= 1 or name.endswith("_norm.weight") or conv
            out_dtype = np.float32 if keep_f32 else np.float16

            def load(dtype=dtype, values=values, n_head=n_head, out_dtype=out_dtype, shape=shape):
                w = to_float(dtype, values).reshape(shape)
                if n_head:
                    w = rope_permute(w, n_head)
                return w if w.dtype == out_dtype else w.astype(out_dtype)

            plan.append((name, shape, out_dtype, load))
    return plan


def qwen35_config(config):
    """The converter's view of a Qwen3.5 config: text_config (of the multimodal folder) moved
    to the top level, rope_parameters with the top-level rope values mirrored into it."""
    config = {**config, **config.get("text_config", {})}
    rope = dict(config.get("rope_parameters") or config.get("rope_scaling") or {})
    for key in ("rope_theta", "partial_rotary_factor"):
        if key not in rope and config.get(key) is not None:
            rope[key] = config[key]
    return dict(config, rope_parameters=rope)


def qwen35_hf_name(hf_name):
    """The converter's filter_tensors: None for tensors it leaves out (vision tower, and the MTP
    block as with --no-mtp), else the name with language_model. removed (conversion/base.py)."""
    if (hf_name.startswith(("mtp.", "model.mtp.", "mlp")) or "visual." in hf_name
            or "vision." in hf_name or "vision_" in hf_name or "merger." in hf_name):
        return None
    return hf_name.replace("language_model.", "")


def qwen35_gguf_name(hf_name):
    if hf_name in GLOBAL_TENSORS:
        return GLOBAL_TENSORS[hf_name]
    parts = hf_name.split(".", 3)  # model.layers.N.<rest>
    if len(parts) < 4 or parts[:2] != ["model", "layers"] or not parts[2].isdecimal():
        return None
    module = QWEN35_LAYER_TENSORS.get(parts[3])
    return module and f"blk.{parts[2]}.{module}"


def reorder_v_heads(w, axis, n_k_heads, v_per_k, head_dim):
    """Value heads from grouped by key head [k0v0 k0v1 .. k1v0 ..] to tiled [k0v0 k1v0 .. k0v1 ..]
    along axis, so that ggml's broadcast of the key heads matches (conversion/qwen.py,
    _LinearAttentionVReorderBase._reorder_v_heads)."""
    w = np.moveaxis(w, axis, 0)
    shape = w.shape
    w = w.reshape(n_k_heads, v_per_k, head_dim, *shape[1:]).swapaxes(0, 1).reshape(shape)
    return np.moveaxis(w, 0, axis)


def qwen35_transform(hf_name, w, config):
    """The converter's changes to a Qwen3.5 tensor, in its order (conversion/qwen.py):
    _LinearAttentionVReorderBase.modify_tensors, then Qwen3NextModel.modify_tensors. Arithmetic
    is done in the stored dtype when that is f16 or f32, as torch does there (bf16 is f32)."""
    n_k, n_v = config["linear_num_key_heads"], config["linear_num_value_heads"]
    if n_k != n_v and "linear_attn." in hf_name:
        d_k, d_v, r = config["linear_key_head_dim"], config["linear_value_head_dim"], n_v // n_k
        if ".in_proj_qkv." in hf_name:  # rows [q | k | v]: only the v rows move
            qk = 2 * n_k * d_k
            w = np.concatenate([w[:qk], reorder_v_heads(w[qk:], 0, n_k, r, d_v)])
        elif ".in_proj_z." in hf_name:
            w = reorder_v_heads(w, 0, n_k, r, d_v)
        elif ".in_proj_b." in hf_name or ".in_proj_a." in hf_name:
            w = reorder_v_heads(w, 0, n_k, r, 1)
        elif ".A_log" in hf_name or ".dt_bias" in hf_name:
            w = reorder_v_heads(w, -1, n_k, r, 1)
        elif ".conv1d" in hf_name:  # [C, 1, K] squeezed; channels [q | k | v]
            w = np.squeeze(w)
            qk = 2 * n_k * d_k
            w = np.concatenate([w[:qk], reorder_v_heads(w[qk:], 0, n_k, r, d_v)])
        elif ".out_proj." in hf_name:  # columns are the value channels
            w = reorder_v_heads(w, 1, n_k, r, d_v)
    if hf_name.endswith(".A_log"):
        w = -np.exp(w)  # llama.cpp's ssm_a is -exp(A_log)
    elif "conv1d" in hf_name:
        w = np.squeeze(w)
    elif hf_name.endswith("norm.weight") and not hf_name.endswith("linear_attn.norm.weight"):
        w = w + w.dtype.type(1)  # zero-centred RMSNorm weights: llama.cpp multiplies by 1 + w
    return w


def plan_qwen35_tensors(model_dir, config):
    """As plan_tensors, for Qwen3.5: [(gguf name, shape, dtype, load function)] in file order."""
    plan = []
    for path in safetensors_files(model_dir):
        for st_name, (dtype, values) in load_safetensors(path).items():
            hf_name = qwen35_hf_name(st_name)
            if hf_name is None:
                continue
            name = qwen35_gguf_name(hf_name)
            if name is None:
                sys.exit(f"make_gguf: {path}: tensor {st_name}: no GGUF name for it")
            shape = tuple(d for d in values.shape if d != 1) if "conv1d" in hf_name else values.shape
            # conversion/base.py prepare_tensors: 1-D tensors, *_norm.weight, ssm_conv1d and
            # names not ending in .weight are F32, the other matrices F16.
            keep_f32 = (len(shape) <= 1 or name.endswith("_norm.weight") or ".ssm_conv1d." in name
                        or not name.endswith(".weight"))
            out_dtype = np.float32 if keep_f32 else np.float16

            def load(dtype=dtype, values=values, hf_name=hf_name, out_dtype=out_dtype):
                w = qwen35_transform(hf_name, to_float(dtype, values), config)
                return w if w.dtype == out_dtype else w.astype(out_dtype)

            plan.append((name, shape, out_dtype, load))
    return plan


def add_qwen35_hparams(writer, gguf, config, name):
    """The keys conversion/qwen.py (Qwen3_5TextModel and its bases Qwen3NextModel, TextModel in
    conversion/base.py) writes for a dense Qwen3.5 text model without MTP; src/models/qwen35.cpp
    requires the ssm_* keys and rope.dimension_sections."""
    writer.add_name(name)
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    rope = config["rope_parameters"]
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        sys.exit(f"make_gguf: qwen3.5 with rope_type {rope.get('rope_type', rope.get('type'))!r} "
                 "is not written here")
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    n_rot = int(head_dim * rope.get("partial_rotary_factor", 0.25))
    # Interleaved mRoPE sections (time, height, width, extra), padded to 4; the converter's
    # default when the config has none is [11, 11, 10, 0] (_Qwen35MRopeMixin).
    sections = list(rope.get("mrope_section", [11, 11, 10]))[:4]
    sections += [0] * (4 - len(sections))
    if sum(sections) > head_dim:
        # ggml's mrope aborts when the sections add up to more than the head size
        # (ggml/src/ggml-cpu/ops.cpp ggml_mrope_cache_init: GGML_ASSERT(sect_dims <= ne0)), as
        # with tiny test configs that keep Qwen3.5's [11, 11, 10]. The converter would write them
        # anyway; here they are cut to the n_rot / 2 rotated pairs instead, assigned as
        # transformers' interleaved mRoPE assigns them (pair i to time / height / width by
        # i % 3). That is [11, 11, 10, 0] again for 64 rotated dims, and for text, where the
        # three positions are equal, the same rotation as any other sections.
        pairs = n_rot // 2
        cut = [len(range(axis, pairs, 3)) for axis in range(3)] + [0]
        print(f"make_gguf: rope.dimension_sections {sections} add up to more than the head size "
              f"{head_dim}, which llama.cpp rejects: writing {cut}", file=sys.stderr)
        sections = cut
    writer.add_rope_dimension_sections(sections)
    if rope.get("rope_theta") is not None:
        writer.add_rope_freq_base(rope["rope_theta"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    # Gated DeltaNet (Qwen3NextModel.set_gguf_parameters)
    if config["linear_key_head_dim"] != config["linear_value_head_dim"]:
        sys.exit("make_gguf: qwen3.5 with linear_key_head_dim != linear_value_head_dim: "
                 "llama.cpp's qwen35 loader takes both from ssm.state_size")
    writer.add_ssm_conv_kernel(config["linear_conv_kernel_dim"])
    writer.add_ssm_state_size(config["linear_key_head_dim"])
    writer.add_ssm_group_count(config["linear_num_key_heads"])
    writer.add_ssm_time_step_rank(config["linear_num_value_heads"])
    writer.add_ssm_inner_size(config["linear_value_head_dim"] * config["linear_num_value_heads"])
    interval = config.get("full_attention_interval", 4)
    # llama.cpp derives the layer kinds from the interval alone: layer i is full attention
    # when (i + 1) % interval == 0 (src/models/qwen35.cpp).
    expected = ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                for i in range(config["num_hidden_layers"])]
    if config.get("layer_types", expected) != expected:
        sys.exit(f"make_gguf: qwen3.5 layer_types do not follow full_attention_interval {interval}")
    writer.add_full_attention_interval(interval)
    writer.add_rope_dimension_count(n_rot)


def qwen35_pre_tokenizer(model_dir):
    r"""The pre-tokenizer name for tokenizer.ggml.pre. The converter finds it by hashing the
    tokens of a test text (conversion/base.py get_vocab_base_pre: Qwen3.5 -> qwen35); without
    transformers this reads the Split regex of tokenizer.json instead: Qwen3.5's regex (letters
    and marks, [\p{L}\p{M}]+) is llama.cpp's qwen35, the older one (\p{L}+) its qwen2, whose
    regexes src/llama-vocab.cpp lists."""
    def regexes(node):
        if isinstance(node, dict):
            if isinstance(node.get("Regex"), str):
                yield node["Regex"]
            for value in node.values():
                yield from regexes(value)
        elif isinstance(node, list):
            for value in node:
                yield from regexes(value)

    found = list(regexes(read_json(model_dir / "tokenizer.json").get("pre_tokenizer")))
    qwen2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    qwen35 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    if found == [qwen35]:
        return "qwen35"
    if found == [qwen2]:
        return "qwen2"
    sys.exit(f"make_gguf: {model_dir / 'tokenizer.json'}: pre-tokenizer regex {found!r} is "
             "neither Qwen3.5's nor Qwen2's")


def looks_special(text):
    """Added tokens the converter marks CONTROL though not special (conversion/base.py
    does_token_look_special)."""
    return (text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


def add_vocab(writer, gguf, model_dir, config, pre, qwen35=False):
    tok = read_json(model_dir / "tokenizer.json")
    n_vocab = config["vocab_size"]
    tokens = [f"[PAD{i}]" for i in range(n_vocab)]
    types = [gguf.TokenType.UNUSED] * n_vocab
    for text, i in tok["model"]["vocab"].items():
        tokens[i], types[i] = text, gguf.TokenType.NORMAL
    for added in tok.get("added_tokens", []):
        i = added["id"]
        tokens[i] = added["content"]
        special = added.get("special") or (qwen35 and looks_special(added["content"]))
        types[i] = gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if qwen35:
        # Merges, bos/eos/pad ids, add_bos_token and the chat template as the converter takes
        # them (conversion/base.py _set_vocab_gpt2 uses gguf-py's SpecialVocab).
        gguf.SpecialVocab(model_dir, load_merges=True).add_to_gguf(writer, quiet=True)
        return
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    writer.add_token_merges(merges)
    eos = config.get("eos_token_id")
    if config.get("bos_token_id") is not None:
        writer.add_bos_token_id(config["bos_token_id"])
    if eos is not None:
        writer.add_eos_token_id(eos[0] if isinstance(eos, list) else eos)
    tok_config = model_dir / "tokenizer_config.json"
    if tok_config.exists() and "add_bos_token" in read_json(tok_config):
        writer.add_add_bos_token(bool(read_json(tok_config)["add_bos_token"]))


def add_hparams(writer, gguf, config, head_dim, name):
    writer.add_name(name)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    n_head_kv = config.get("num_key_value_heads", config["num_attention_heads"])
    if config.get("model_type") == "lfm2":
        # Per layer, 0 for the short-convolution blocks (which have no KV).
        if config.get("block_auto_adjust_ff_dim", True):
            sys.exit("make_gguf: lfm2 with block_auto_adjust_ff_dim is not written here")
        n_head_kv = [0 if t == "conv" else n_head_kv for t in config["layer_types"]]
        writer.add_shortconv_l_cache(config["conv_L_cache"])
        config = dict(config, rms_norm_eps=config["norm_eps"])
    writer.add_head_count_kv(n_head_kv)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_vocab_size(config["vocab_size"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)


def make_gguf(gguf, model_dir, out):
    config = read_json(model_dir / "config.json")
    model_type = config.get("model_type")
    if model_type not in ARCHS:
        sys.exit(f"make_gguf: {model_dir / 'config.json'}: model_type {model_type!r}, "
                 f"expected one of {', '.join(ARCHS)}")
    arch, pre = ARCHS[model_type]
    qwen35 = arch == "qwen35"
    if qwen35:
        config = qwen35_config(config)
        pre = qwen35_pre_tokenizer(model_dir)
        plan = plan_qwen35_tensors(model_dir, config)
    else:
        head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        plan = plan_tensors(model_dir, config, arch, head_dim)

    tmp = out.with_name(out.name + ".tmp")
    writer = gguf.GGUFWriter(tmp, arch)
    try:
        if qwen35:
            add_qwen35_hparams(writer, gguf, config, model_dir.name)
        else:
            add_hparams(writer, gguf, config, head_dim, model_dir.name)
        add_vocab(writer, gguf, model_dir, config, pre, qwen35)
        for name, shape, dtype, _ in plan:
            nbytes = math.prod(shape) * np.dtype(dtype).itemsize
            writer.add_tensor_info(name, shape, np.dtype(dtype), nbytes)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for _, _, _, load in plan:  # one tensor in memory at a time
            writer.write_tensor_data(np.ascontiguousarray(load()))
        writer.close()
        os.replace(tmp, out)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise
    return len(plan)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path, help="Hugging Face folder")
    parser.add_argument("-o", "--output", type=Path, required=True, help="GGUF file to write")
    parser.add_argument("--llama-cpp", default=os.environ.get("LLAMA_CPP"),
                        help="llama.cpp checkout whose gguf-py to use (default: $LLAMA_CPP)")
    args = parser.parse_args()
    gguf = import_gguf(args.llama_cpp)
    n = make_gguf(gguf, args.model_dir, args.output)
    size = args.output.stat().st_size / 2**30
    print(f"make_gguf: wrote {args.output} ({n} tensors, {size:.2f} GiB)")


if __name__ == "__main__":
    main()
