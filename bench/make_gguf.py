#!/usr/bin/python3
"""Write a Hugging Face folder (Llama, Qwen2, Qwen3, LFM2) as an F16 GGUF file for llama.cpp.

Only for the speed comparison in bench/README.md: llama.cpp's own converter needs torch,
this needs numpy and the gguf-py package of a llama.cpp checkout, found through
--llama-cpp DIR, $LLAMA_CPP, or PYTHONPATH=DIR/gguf-py.

    /usr/bin/python3 bench/make_gguf.py MODEL_DIR -o MODEL.gguf --llama-cpp LLAMA_CPP_DIR

Matrices are written F16; norm weights, biases and rope factors F32, as llama.cpp's
converter writes them. The vocabulary comes from tokenizer.json, padded to vocab_size.
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
# model_type in config.json -> (GGUF architecture, pre-tokenizer name llama.cpp knows).
ARCHS = {"llama": ("llama", "llama-bpe"), "qwen2": ("qwen2", "qwen2"), "qwen3": ("qwen3", "qwen2"),
         "lfm2": ("lfm2", "lfm2")}
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


def add_vocab(writer, gguf, model_dir, config, pre):
    tok = read_json(model_dir / "tokenizer.json")
    n_vocab = config["vocab_size"]
    tokens = [f"[PAD{i}]" for i in range(n_vocab)]
    types = [gguf.TokenType.UNUSED] * n_vocab
    for text, i in tok["model"]["vocab"].items():
        tokens[i], types[i] = text, gguf.TokenType.NORMAL
    for added in tok.get("added_tokens", []):
        i = added["id"]
        tokens[i] = added["content"]
        types[i] = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
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
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    plan = plan_tensors(model_dir, config, arch, head_dim)

    tmp = out.with_name(out.name + ".tmp")
    writer = gguf.GGUFWriter(tmp, arch)
    try:
        add_hparams(writer, gguf, config, head_dim, model_dir.name)
        add_vocab(writer, gguf, model_dir, config, pre)
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
