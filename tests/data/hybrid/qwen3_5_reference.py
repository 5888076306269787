#!/usr/bin/env python3
"""Double-precision reference for the TEXT part of Qwen3.5 (transformers `qwen3_5`).

Pure Python 3, standard library only (no numpy, no torch). It reads a Hugging Face
checkpoint directory (config.json + *.safetensors) and prints the logits of every
position of a token sequence, computed token by token in float64 with carried
state: a conv window and a recurrent matrix per Gated DeltaNet layer, and a key /
value list per full-attention layer. That token-by-token recurrence is the
definition this file implements.

Formulas follow (facts only, own code) the transformers sources:
  src/transformers/models/qwen3_5/modeling_qwen3_5.py
  src/transformers/models/qwen3_5/configuration_qwen3_5.py
  src/transformers/configuration_utils.py      (rope parameter precedence, layer-type aliases)
  src/transformers/models/qwen3_next/modeling_qwen3_next.py
      (only for the fused in_proj_qkvz / in_proj_ba layout, also accepted here)

Summary of the model (per token, position p):
  h = embed[token]
  per layer:  h += mixer(rms1(h)) ;  h += down(silu(gate(rms2(h))) * up(rms2(h)))
  logits = lm_head(rms_final(h))
  rms(x) = x / sqrt(mean(x^2) + eps) * (1 + w)           (zero-centred weight)
  full-attention mixer: q_proj gives per head [query(hd) | gate(hd)]; q_norm / k_norm
      (same 1 + w norm, per head); NeoX-style rotation of the first
      int(hd * partial_rotary_factor) dims; softmax(q.k / sqrt(hd)); output
      * sigmoid(gate); o_proj.  Text-only mRoPE reduces to that plain rotation.
  DeltaNet mixer: causal depthwise conv (kernel K, SiLU) over [q | k | v] channels of
      in_proj_qkv; q, k l2-normalised (eps 1e-6), q / sqrt(dk); beta = sigmoid(b);
      g = -exp(A_log) * softplus(a + dt_bias); per value head h (key head h // (nv/nk)):
      S *= exp(g); delta = beta * (v - S^T k); S += k delta^T; o = S^T q;
      o = o / sqrt(mean(o^2) + eps) * w * silu(z)  (plain weight);  out_proj.

Usage:
  python3 qwen3_5_reference.py MODEL_DIR --tokens 1,2,3 [--out FILE.json]
  python3 qwen3_5_reference.py --self-test
"""

import argparse
import json
import math
import os
import random
import struct
import sys
import tempfile

L2NORM_EPS = 1e-6  # fixed in the l2norm helper of the DeltaNet kernels, not rms_norm_eps


# --------------------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------------------

def read_safetensors_header(path):
    """Return (header dict without __metadata__, absolute offset of the data section)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return header, 8 + n


def decode_floats(raw, dtype):
    """Bytes of one tensor -> flat list of Python floats (exact widening to float64)."""
    if dtype == "F32":
        return list(struct.unpack("<%df" % (len(raw) // 4), raw))
    if dtype == "F64":
        return list(struct.unpack("<%dd" % (len(raw) // 8), raw))
    if dtype == "F16":
        return list(struct.unpack("<%de" % (len(raw) // 2), raw))
    if dtype == "BF16":
        # bf16 is the top half of a float32: shift the 16 bits into place.
        n = len(raw) // 2
        halves = struct.unpack("<%dH" % n, raw)
        return list(struct.unpack("<%df" % n, struct.pack("<%dI" % n, *[h << 16 for h in halves])))
    raise ValueError("unsupported safetensors dtype %r" % dtype)


class TensorStore:
    """Index of every tensor in the checkpoint's safetensors files; loads on demand."""

    def __init__(self, model_dir):
        files = sorted(x for x in os.listdir(model_dir) if x.endswith(".safetensors"))
        if not files:
            raise FileNotFoundError("no .safetensors file in %s" % model_dir)
        self.entries = {}
        for name in files:
            path = os.path.join(model_dir, name)
            header, data_start = read_safetensors_header(path)
            for key, info in header.items():
                self.entries[key] = (path, data_start, info)

    def has(self, name):
        return name in self.entries

    def shape(self, name):
        return list(self.entries[name][2]["shape"])

    def flat(self, name):
        path, data_start, info = self.entries[name]
        begin, end = info["data_offsets"]
        with open(path, "rb") as f:
            f.seek(data_start + begin)
            raw = f.read(end - begin)
        values = decode_floats(raw, info["dtype"])
        if len(values) != math.prod(info["shape"]):
            raise ValueError("%s: %d values for shape %s" % (name, len(values), info["shape"]))
        return values


def encode_floats(values, dtype):
    """Flat floats -> bytes (used only by the self-test's writer)."""
    n = len(values)
    if dtype == "F32":
        return struct.pack("<%df" % n, *values)
    if dtype == "F16":
        return struct.pack("<%de" % n, *values)
    if dtype == "BF16":
        bits = struct.unpack("<%dI" % n, struct.pack("<%df" % n, *values))
        # round to nearest even on the dropped 16 bits
        return struct.pack("<%dH" % n, *[((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF for b in bits])
    raise ValueError(dtype)


def write_safetensors(path, tensors):
    """tensors: {name: (shape, flat values, dtype)} -> a minimal safetensors file."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        shape, values, dtype = tensors[name]
        blob = encode_floats(values, dtype)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # keep the data 8-byte aligned, as the format suggests
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


# --------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------

LAYER_TYPE_ALIASES = {"mamba": "linear_attention", "attention": "full_attention",
                      "linear": "linear_attention", "full": "full_attention"}


def parse_config(raw):
    """config.json dict -> flat dict of what the text model needs, with transformers' defaults."""
    nested = isinstance(raw.get("text_config"), dict)
    text = raw["text_config"] if nested else raw

    cfg = {
        "vocab_size": text.get("vocab_size", 248320),
        "hidden_size": text.get("hidden_size", 4096),
        "intermediate_size": text.get("intermediate_size", 12288),
        "num_hidden_layers": text.get("num_hidden_layers", 32),
        "num_attention_heads": text.get("num_attention_heads", 16),
        "num_key_value_heads": text.get("num_key_value_heads", 4),
        "hidden_act": text.get("hidden_act", "silu"),
        "rms_norm_eps": text.get("rms_norm_eps", 1e-6),
        "attention_bias": text.get("attention_bias", False),
        "linear_conv_kernel_dim": text.get("linear_conv_kernel_dim", 4),
        "linear_key_head_dim": text.get("linear_key_head_dim", 128),
        "linear_value_head_dim": text.get("linear_value_head_dim", 128),
        "linear_num_key_heads": text.get("linear_num_key_heads", 16),
        "linear_num_value_heads": text.get("linear_num_value_heads", 32),
    }
    if cfg["num_key_value_heads"] is None:
        cfg["num_key_value_heads"] = cfg["num_attention_heads"]
    head_dim = text.get("head_dim", 256)  # class default is 256, not hidden/heads
    cfg["head_dim"] = head_dim if head_dim else cfg["hidden_size"] // cfg["num_attention_heads"]

    # The model's own config decides tying: the top level for the multimodal wrapper.
    if nested and "tie_word_embeddings" in raw:
        cfg["tie_word_embeddings"] = bool(raw["tie_word_embeddings"])
    else:
        cfg["tie_word_embeddings"] = bool(text.get("tie_word_embeddings", False))

    layer_types = text.get("layer_types")
    if layer_types is None:
        interval = text.get("full_attention_interval", 4)
        layer_types = ["linear_attention" if (i + 1) % interval else "full_attention"
                       for i in range(cfg["num_hidden_layers"])]
    layer_types = [LAYER_TYPE_ALIASES.get(t, t) for t in layer_types]
    if len(layer_types) < cfg["num_hidden_layers"]:
        raise ValueError("layer_types has %d entries for %d layers" % (len(layer_types), cfg["num_hidden_layers"]))
    layer_types = layer_types[:cfg["num_hidden_layers"]]  # the forward only runs num_hidden_layers layers
    for t in layer_types:
        if t not in ("linear_attention", "full_attention"):
            raise ValueError("unsupported layer type %r" % t)
    cfg["layer_types"] = layer_types

    # RoPE: a legacy rope_scaling dict replaces rope_parameters; inside it the dict's own
    # values win, then the top-level legacy keys, then the defaults (theta 1e4, factor 0.25).
    rope = dict(text.get("rope_scaling") or text.get("rope_parameters") or {})
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in ("default", "mrope"):
        raise ValueError("rope_type %r is not implemented by this reference" % rope_type)
    cfg["rope_theta"] = float(rope.get("rope_theta", text.get("rope_theta", 10000.0)))
    cfg["partial_rotary_factor"] = float(rope.get("partial_rotary_factor", text.get("partial_rotary_factor", 0.25)))
    cfg["mrope_section"] = list(rope.get("mrope_section", [11, 11, 10]))
    cfg["mrope_interleaved"] = rope.get("mrope_interleaved", True)  # read for the record; text-only ignores it
    cfg["rotary_dim"] = int(cfg["head_dim"] * cfg["partial_rotary_factor"])
    if cfg["rotary_dim"] % 2:
        raise ValueError("odd rotary dimension %d" % cfg["rotary_dim"])

    if cfg["hidden_act"] != "silu":
        raise ValueError("hidden_act %r not implemented (Qwen3.5 uses silu)" % cfg["hidden_act"])
    if cfg["linear_num_value_heads"] % cfg["linear_num_key_heads"]:
        raise ValueError("linear_num_value_heads must be a multiple of linear_num_key_heads")
    if cfg["num_attention_heads"] % cfg["num_key_value_heads"]:
        raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
    return cfg


# --------------------------------------------------------------------------------------
# scalar / vector helpers (float64)
# --------------------------------------------------------------------------------------

def dot(a, b):
    return math.fsum(x * y for x, y in zip(a, b))  # correctly rounded: a reference, not a speed record


def matvec(rows, x, bias=None):
    out = [dot(row, x) for row in rows]
    if bias is not None:
        out = [o + c for o, c in zip(out, bias)]
    return out


def sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def silu(x):
    return x * sigmoid(x)


def softplus(x):
    # exact log(1 + e^x) without overflow (torch switches to x itself above 20)
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def rms_norm_offset(x, weight, eps):
    """Qwen3.5 RMSNorm: the stored weight is zero-centred, the scale is (1 + weight)."""
    inv = 1.0 / math.sqrt(math.fsum(v * v for v in x) / len(x) + eps)
    return [v * inv * (1.0 + w) for v, w in zip(x, weight)]


def gated_rms_norm(x, gate, weight, eps):
    """DeltaNet output norm: plain weight (initialised to ones), then times silu(gate)."""
    inv = 1.0 / math.sqrt(math.fsum(v * v for v in x) / len(x) + eps)
    return [v * inv * w * silu(z) for v, w, z in zip(x, weight, gate)]


def l2_normalize(x):
    inv = 1.0 / math.sqrt(math.fsum(v * v for v in x) + L2NORM_EPS)
    return [v * inv for v in x]


def split_heads(vec, n, d):
    return [vec[i * d:(i + 1) * d] for i in range(n)]


# --------------------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------------------

TEXT_PREFIXES = ("model.language_model.", "model.", "language_model.model.", "language_model.", "")
LM_HEAD_NAMES = ("lm_head.weight", "language_model.lm_head.weight")


class Loader:
    """Reads named tensors with a shape check, as rows (2-D) or flat lists (1-D)."""

    def __init__(self, store, prefix):
        self.store, self.prefix = store, prefix

    def has(self, name):
        return self.store.has(self.prefix + name)

    def tensor(self, name, shape, full_name=False):
        key = name if full_name else self.prefix + name
        if not self.store.has(key):
            raise KeyError("missing tensor %s" % key)
        got = self.store.shape(key)
        if got != list(shape):
            raise ValueError("%s has shape %s, expected %s" % (key, got, list(shape)))
        flat = self.store.flat(key)
        if len(shape) == 1:
            return flat
        cols = math.prod(shape[1:])
        return [flat[r * cols:(r + 1) * cols] for r in range(shape[0])]

    def optional(self, name, shape):
        return self.tensor(name, shape) if self.has(name) else None


def unpack_fused_qkvz_ba(qkvz, ba, cfg):
    """Qwen3-Next layout -> Qwen3.5 layout.

    in_proj_qkvz rows are grouped per key head g: [q_g (dk) | k_g (dk) | v_g (r*dv) | z_g (r*dv)],
    in_proj_ba rows per key head g: [b_g (r) | a_g (r)], with r = nv / nk value heads per group.
    """
    nk, nv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    r = nv // nk
    width = 2 * dk + 2 * r * dv
    q, k, v, z, b, a = [], [], [], [], [], []
    for g in range(nk):
        block = qkvz[g * width:(g + 1) * width]
        q += block[:dk]
        k += block[dk:2 * dk]
        v += block[2 * dk:2 * dk + r * dv]
        z += block[2 * dk + r * dv:]
        small = ba[g * 2 * r:(g + 1) * 2 * r]
        b += small[:r]
        a += small[r:]
    return q + k + v, z, b, a


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = parse_config(json.load(f))
    store = TensorStore(model_dir)
    prefix = next((p for p in TEXT_PREFIXES if store.has(p + "embed_tokens.weight")), None)
    if prefix is None:
        raise KeyError("no embed_tokens.weight under any of the prefixes %s" % (TEXT_PREFIXES,))
    ld = Loader(store, prefix)

    H, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    nk, nv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv, K = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"], cfg["linear_conv_kernel_dim"]
    conv_dim = 2 * nk * dk + nv * dv
    bias = cfg["attention_bias"]

    model = {"cfg": cfg, "prefix": prefix, "embed": ld.tensor("embed_tokens.weight", [V, H]),
             "norm": ld.tensor("norm.weight", [H]), "layers": []}

    for i, kind in enumerate(cfg["layer_types"]):
        p = "layers.%d." % i
        layer = {"kind": kind,
                 "input_norm": ld.tensor(p + "input_layernorm.weight", [H]),
                 "post_norm": ld.tensor(p + "post_attention_layernorm.weight", [H])}
        if not ld.has(p + "mlp.gate_proj.weight"):
            raise NotImplementedError("layer %d has no dense mlp.gate_proj (MoE layers are not implemented)" % i)
        layer["gate_proj"] = ld.tensor(p + "mlp.gate_proj.weight", [I, H])
        layer["up_proj"] = ld.tensor(p + "mlp.up_proj.weight", [I, H])
        layer["down_proj"] = ld.tensor(p + "mlp.down_proj.weight", [H, I])
        if kind == "full_attention":
            a = p + "self_attn."
            layer["q_proj"] = ld.tensor(a + "q_proj.weight", [nh * hd * 2, H])
            layer["k_proj"] = ld.tensor(a + "k_proj.weight", [nkv * hd, H])
            layer["v_proj"] = ld.tensor(a + "v_proj.weight", [nkv * hd, H])
            layer["o_proj"] = ld.tensor(a + "o_proj.weight", [H, nh * hd])
            layer["q_norm"] = ld.tensor(a + "q_norm.weight", [hd])
            layer["k_norm"] = ld.tensor(a + "k_norm.weight", [hd])
            for name, n in (("q_proj", nh * hd * 2), ("k_proj", nkv * hd), ("v_proj", nkv * hd), ("o_proj", H)):
                layer[name + "_bias"] = ld.tensor(a + name + ".bias", [n]) if bias else None
        else:
            d = p + "linear_attn."
            if ld.has(d + "in_proj_qkv.weight"):
                layer["in_proj_qkv"] = ld.tensor(d + "in_proj_qkv.weight", [conv_dim, H])
                layer["in_proj_z"] = ld.tensor(d + "in_proj_z.weight", [nv * dv, H])
                layer["in_proj_b"] = ld.tensor(d + "in_proj_b.weight", [nv, H])
                layer["in_proj_a"] = ld.tensor(d + "in_proj_a.weight", [nv, H])
            else:  # Qwen3-Next checkpoints fuse these four projections into two
                qkvz = ld.tensor(d + "in_proj_qkvz.weight", [conv_dim + nv * dv, H])
                ba = ld.tensor(d + "in_proj_ba.weight", [2 * nv, H])
                (layer["in_proj_qkv"], layer["in_proj_z"],
                 layer["in_proj_b"], layer["in_proj_a"]) = unpack_fused_qkvz_ba(qkvz, ba, cfg)
            layer["conv"] = ld.tensor(d + "conv1d.weight", [conv_dim, 1, K])  # per channel: K taps, oldest first
            layer["conv_bias"] = ld.optional(d + "conv1d.bias", [conv_dim])
            layer["dt_bias"] = ld.tensor(d + "dt_bias", [nv])
            layer["A_log"] = ld.tensor(d + "A_log", [nv])
            layer["gnorm"] = ld.tensor(d + "norm.weight", [dv])
            layer["out_proj"] = ld.tensor(d + "out_proj.weight", [H, nv * dv])
        model["layers"].append(layer)

    head_name = next((n for n in LM_HEAD_NAMES if store.has(n)), None)
    if cfg["tie_word_embeddings"]:
        model["lm_head"] = model["embed"]
    elif head_name is not None:
        model["lm_head"] = ld.tensor(head_name, [V, H], full_name=True)
    else:
        print("warning: tie_word_embeddings is false but no lm_head.weight is stored; "
              "using embed_tokens as the output head", file=sys.stderr)
        model["lm_head"] = model["embed"]
    return model


# --------------------------------------------------------------------------------------
# rotary embedding
# --------------------------------------------------------------------------------------

def inv_frequencies(cfg):
    rot = cfg["rotary_dim"]
    return [1.0 / (cfg["rope_theta"] ** (2 * i / rot)) for i in range(rot // 2)]


def mrope_angles(inv_freq, pos_t, pos_h, pos_w, section):
    """Interleaved mRoPE recomposition: start from the temporal angles, then frequency slots
    1, 4, 7, ... (< 3 * section[1]) take the height angle and 2, 5, 8, ... (< 3 * section[2])
    the width angle. Returns the rot/2 angles; cos/sin of them are used twice (both halves)."""
    half = len(inv_freq)
    angles = [pos_t * f for f in inv_freq]
    for comp, (offset, pos) in enumerate(((1, pos_h), (2, pos_w)), start=1):
        for i in range(offset, min(3 * section[comp], half), 3):
            angles[i] = pos * inv_freq[i]
    return angles


def text_rope_tables(cfg, pos):
    """Text-only input: temporal = height = width = token position, so every slot gets pos * inv_freq."""
    angles = mrope_angles(inv_frequencies(cfg), pos, pos, pos, cfg["mrope_section"])
    return [math.cos(x) for x in angles], [math.sin(x) for x in angles]


def apply_rope(x, cos, sin):
    """NeoX rotate-half on the first 2*len(cos) dims; the rest passes through."""
    half = len(cos)
    out = list(x)
    for i in range(half):
        a, b = x[i], x[i + half]
        out[i] = a * cos[i] - b * sin[i]
        out[i + half] = b * cos[i] + a * sin[i]
    return out


# --------------------------------------------------------------------------------------
# layers, one token at a time
# --------------------------------------------------------------------------------------

def new_state(cfg, kind):
    if kind == "full_attention":
        return {"keys": [], "values": []}  # per past token: list over kv heads
    conv_dim = 2 * cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"] + \
        cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    return {
        # the K-1 previous conv inputs, oldest first; zeros before the sequence starts
        "window": [[0.0] * conv_dim for _ in range(cfg["linear_conv_kernel_dim"] - 1)],
        # one [dk][dv] matrix per value head
        "S": [[[0.0] * dv for _ in range(dk)] for _ in range(cfg["linear_num_value_heads"])],
    }


def full_attention_step(layer, cfg, x, pos, state):
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    qg = matvec(layer["q_proj"], x, layer["q_proj_bias"])
    # per head the projection holds [query (hd) | gate (hd)]
    queries = [qg[h * 2 * hd:h * 2 * hd + hd] for h in range(nh)]
    gate = [v for h in range(nh) for v in qg[h * 2 * hd + hd:(h + 1) * 2 * hd]]
    keys = split_heads(matvec(layer["k_proj"], x, layer["k_proj_bias"]), nkv, hd)
    values = split_heads(matvec(layer["v_proj"], x, layer["v_proj_bias"]), nkv, hd)

    cos, sin = text_rope_tables(cfg, pos)
    queries = [apply_rope(rms_norm_offset(q, layer["q_norm"], eps), cos, sin) for q in queries]
    keys = [apply_rope(rms_norm_offset(k, layer["k_norm"], eps), cos, sin) for k in keys]
    state["keys"].append(keys)
    state["values"].append(values)

    scale = hd ** -0.5
    group = nh // nkv
    out = []
    for h in range(nh):
        kvh = h // group  # consecutive query heads share one kv head
        scores = [dot(queries[h], ks[kvh]) * scale for ks in state["keys"]]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = math.fsum(weights)
        for j in range(hd):
            out.append(math.fsum(w * vs[kvh][j] for w, vs in zip(weights, state["values"])) / total)
    out = [o * sigmoid(g) for o, g in zip(out, gate)]
    return matvec(layer["o_proj"], out, layer["o_proj_bias"])


def conv_step(layer, window, mixed):
    """Depthwise causal conv over [window..., mixed] with SiLU; shifts the window."""
    K = len(window) + 1
    out = []
    for c, taps in enumerate(layer["conv"]):
        acc = math.fsum([taps[j] * window[j][c] for j in range(K - 1)] + [taps[K - 1] * mixed[c]])
        if layer["conv_bias"] is not None:
            acc += layer["conv_bias"][c]
        out.append(silu(acc))
    if K > 1:
        window.pop(0)
        window.append(list(mixed))
    return out


def delta_inputs(layer, cfg, conv_out, z, b, a):
    """Per value head: (q, k, v, z, g, beta) after normalisation, scaling and the head repeat."""
    nk, nv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    qs = split_heads(conv_out[:nk * dk], nk, dk)
    ks = split_heads(conv_out[nk * dk:2 * nk * dk], nk, dk)
    vs = split_heads(conv_out[2 * nk * dk:], nv, dv)
    zs = split_heads(z, nv, dv)
    qs = [[v / math.sqrt(dk) for v in l2_normalize(q)] for q in qs]
    ks = [l2_normalize(k) for k in ks]
    rep = nv // nk
    heads = []
    for h in range(nv):
        g = -math.exp(layer["A_log"][h]) * softplus(a[h] + layer["dt_bias"][h])
        heads.append((qs[h // rep], ks[h // rep], vs[h], zs[h], g, sigmoid(b[h])))
    return heads


def delta_rule_step(S, q, k, v, g, beta):
    """One recurrent step on S[dk][dv] in place; returns the output o = S^T q (length dv)."""
    decay = math.exp(g)
    for row in S:
        for j in range(len(row)):
            row[j] *= decay
    dv = len(v)
    kv_mem = [math.fsum(S[i][j] * k[i] for i in range(len(k))) for j in range(dv)]
    delta = [(v[j] - kv_mem[j]) * beta for j in range(dv)]
    for i, ki in enumerate(k):
        row = S[i]
        for j in range(dv):
            row[j] += ki * delta[j]
    return [math.fsum(S[i][j] * q[i] for i in range(len(q))) for j in range(dv)]


def deltanet_step(layer, cfg, x, state):
    mixed = matvec(layer["in_proj_qkv"], x)
    z = matvec(layer["in_proj_z"], x)
    b = matvec(layer["in_proj_b"], x)
    a = matvec(layer["in_proj_a"], x)
    conv_out = conv_step(layer, state["window"], mixed)
    out = []
    for h, (q, k, v, zh, g, beta) in enumerate(delta_inputs(layer, cfg, conv_out, z, b, a)):
        o = delta_rule_step(state["S"][h], q, k, v, g, beta)
        out += gated_rms_norm(o, zh, layer["gnorm"], cfg["rms_norm_eps"])
    return matvec(layer["out_proj"], out)


def mlp(layer, x):
    gate = matvec(layer["gate_proj"], x)
    up = matvec(layer["up_proj"], x)
    return matvec(layer["down_proj"], [silu(g) * u for g, u in zip(gate, up)])


def run_model(model, tokens, record=None):
    """Logits for every position. record (optional dict) collects (input, output) of each
    DeltaNet mixer per layer index, for the self-test's chunked comparison."""
    cfg = model["cfg"]
    eps = cfg["rms_norm_eps"]
    states = [new_state(cfg, layer["kind"]) for layer in model["layers"]]
    all_logits = []
    for pos, tok in enumerate(tokens):
        if not 0 <= tok < cfg["vocab_size"]:
            raise ValueError("token %d outside the vocabulary (%d)" % (tok, cfg["vocab_size"]))
        h = list(model["embed"][tok])
        for li, (layer, state) in enumerate(zip(model["layers"], states)):
            xn = rms_norm_offset(h, layer["input_norm"], eps)
            if layer["kind"] == "full_attention":
                y = full_attention_step(layer, cfg, xn, pos, state)
            else:
                y = deltanet_step(layer, cfg, xn, state)
                if record is not None:
                    record.setdefault(li, []).append((xn, y))
            h = [u + w for u, w in zip(h, y)]
            h = [u + w for u, w in zip(h, mlp(layer, rms_norm_offset(h, layer["post_norm"], eps)))]
        all_logits.append(matvec(model["lm_head"], rms_norm_offset(h, model["norm"], eps)))
    return all_logits


# --------------------------------------------------------------------------------------
# chunked gated delta rule (whole sequence at once) - used only to cross-check
# --------------------------------------------------------------------------------------

def causal_conv_sequence(layer, mixed_seq):
    """Conv over the whole sequence with K-1 zeros of left padding, then SiLU."""
    taps = layer["conv"]
    K = len(taps[0])
    T = len(mixed_seq)
    out = []
    for t in range(T):
        row = []
        for c in range(len(taps)):
            acc = math.fsum(taps[c][j] * mixed_seq[t - (K - 1) + j][c]
                            for j in range(K) if t - (K - 1) + j >= 0)
            if layer["conv_bias"] is not None:
                acc += layer["conv_bias"][c]
            row.append(silu(acc))
        out.append(row)
    return out


def gated_delta_chunked(qs, ks, vs, gs, betas, chunk, S0=None):
    """Chunked form of the rule for one head. Within a chunk with cumulative log-decay G:
    L[i][j] = beta_i (k_i.k_j) e^(G_i-G_j) (j < i); U = (I+L)^-1 (beta v); W = (I+L)^-1 (beta e^G k);
    v_new = U - W S; o_i = e^(G_i) q_i S + sum_{j<=i} (q_i.k_j) e^(G_i-G_j) v_new_j;
    S <- e^(G_last) S + sum_j e^(G_last-G_j) k_j v_new_j^T."""
    dk, dv = len(ks[0]), len(vs[0])
    S = [list(r) for r in S0] if S0 is not None else [[0.0] * dv for _ in range(dk)]
    outs = []
    for start in range(0, len(qs), chunk):
        idx = list(range(start, min(start + chunk, len(qs))))
        n = len(idx)
        G, run = [], 0.0
        for t in idx:
            run += gs[t]
            G.append(run)
        L = [[betas[idx[i]] * dot(ks[idx[i]], ks[idx[j]]) * math.exp(G[i] - G[j]) if j < i else 0.0
              for j in range(n)] for i in range(n)]
        U, W = [], []
        for i in range(n):  # forward substitution with the unit lower-triangular I + L
            t = idx[i]
            u = [betas[t] * x for x in vs[t]]
            w = [betas[t] * math.exp(G[i]) * x for x in ks[t]]
            for j in range(i):
                u = [x - L[i][j] * y for x, y in zip(u, U[j])]
                w = [x - L[i][j] * y for x, y in zip(w, W[j])]
            U.append(u)
            W.append(w)
        v_new = [[U[i][c] - math.fsum(W[i][r] * S[r][c] for r in range(dk)) for c in range(dv)]
                 for i in range(n)]
        for i in range(n):
            q = qs[idx[i]]
            o = [math.exp(G[i]) * math.fsum(q[r] * S[r][c] for r in range(dk)) for c in range(dv)]
            for j in range(i + 1):
                w = dot(q, ks[idx[j]]) * math.exp(G[i] - G[j])
                o = [x + w * y for x, y in zip(o, v_new[j])]
            outs.append(o)
        last = G[-1]
        S = [[math.exp(last) * S[r][c] + math.fsum(math.exp(last - G[j]) * ks[idx[j]][r] * v_new[j][c]
                                                    for j in range(n))
              for c in range(dv)] for r in range(dk)]
    return outs, S


def deltanet_sequence_chunked(layer, cfg, xs, chunk, split=None):
    """The DeltaNet mixer over a whole sequence via the chunked rule. With split=s the rule
    runs on [0, s) and then [s, T) from the carried state, to exercise initial_state."""
    nv, dv = cfg["linear_num_value_heads"], cfg["linear_value_head_dim"]
    conv = causal_conv_sequence(layer, [matvec(layer["in_proj_qkv"], x) for x in xs])
    per_token = [delta_inputs(layer, cfg, conv[t], matvec(layer["in_proj_z"], x),
                              matvec(layer["in_proj_b"], x), matvec(layer["in_proj_a"], x))
                 for t, x in enumerate(xs)]
    bounds = [(0, len(xs))] if split is None else [(0, split), (split, len(xs))]
    head_outs = []
    for h in range(nv):
        cols = list(zip(*[per_token[t][h] for t in range(len(xs))]))  # q, k, v, z, g, beta over t
        S, outs = None, []
        for lo, hi in bounds:
            part, S = gated_delta_chunked(*(list(c[lo:hi]) for c in (cols[0], cols[1], cols[2], cols[4], cols[5])),
                                          chunk=chunk, S0=S)
            outs += part
        head_outs.append([gated_rms_norm(o, cols[3][t], layer["gnorm"], cfg["rms_norm_eps"])
                          for t, o in enumerate(outs)])
    return [matvec(layer["out_proj"], [v for h in range(nv) for v in head_outs[h][t]]) for t in range(len(xs))]


# --------------------------------------------------------------------------------------
# self-test
# --------------------------------------------------------------------------------------

TINY = {"hidden_size": 32, "intermediate_size": 48, "vocab_size": 50, "num_hidden_layers": 4,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
        "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
        "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4, "rms_norm_eps": 1e-6}


def tiny_weights(seed):
    """Random Qwen3.5-layout text weights for TINY, keyed by name without prefix. Values are
    rounded through the dtype they will be stored in, so every layout decodes to the same numbers."""
    rng = random.Random(seed)
    c = TINY
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    nh, nkv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    nk, nv, dk, dv, K = (c["linear_num_key_heads"], c["linear_num_value_heads"], c["linear_key_head_dim"],
                         c["linear_value_head_dim"], c["linear_conv_kernel_dim"])
    conv_dim = 2 * nk * dk + nv * dv

    def rnd(shape, scale, dtype="F32", center=0.0):
        n = math.prod(shape)
        vals = [center + rng.gauss(0.0, scale) for _ in range(n)]
        vals = decode_floats(encode_floats(vals, dtype), dtype)
        return (shape, vals, dtype)

    w = {"embed_tokens.weight": rnd([V, H], 1.0, "BF16"), "norm.weight": rnd([H], 0.1, "F16")}
    for i in range(c["num_hidden_layers"]):
        p = "layers.%d." % i
        w[p + "input_layernorm.weight"] = rnd([H], 0.1, "F16")
        w[p + "post_attention_layernorm.weight"] = rnd([H], 0.1)
        w[p + "mlp.gate_proj.weight"] = rnd([I, H], H ** -0.5, "BF16")
        w[p + "mlp.up_proj.weight"] = rnd([I, H], H ** -0.5)
        w[p + "mlp.down_proj.weight"] = rnd([H, I], I ** -0.5)
        if i == 3:
            a = p + "self_attn."
            w[a + "q_proj.weight"] = rnd([nh * hd * 2, H], H ** -0.5)
            w[a + "k_proj.weight"] = rnd([nkv * hd, H], H ** -0.5)
            w[a + "v_proj.weight"] = rnd([nkv * hd, H], H ** -0.5)
            w[a + "o_proj.weight"] = rnd([H, nh * hd], (nh * hd) ** -0.5)
            w[a + "q_norm.weight"] = rnd([hd], 0.1)
            w[a + "k_norm.weight"] = rnd([hd], 0.1)
        else:
            d = p + "linear_attn."
            w[d + "in_proj_qkv.weight"] = rnd([conv_dim, H], H ** -0.5)
            w[d + "in_proj_z.weight"] = rnd([nv * dv, H], H ** -0.5)
            w[d + "in_proj_b.weight"] = rnd([nv, H], H ** -0.5)
            w[d + "in_proj_a.weight"] = rnd([nv, H], H ** -0.5)
            w[d + "conv1d.weight"] = rnd([conv_dim, 1, K], 0.5, "BF16")
            w[d + "dt_bias"] = rnd([nv], 0.5, "F32", 1.0)
            w[d + "A_log"] = rnd([nv], 0.5, "F32", -0.5)  # moderate decays, so old tokens still matter
            w[d + "norm.weight"] = rnd([dv], 0.1, "F32", 1.0)
            w[d + "out_proj.weight"] = rnd([H, nv * dv], (nv * dv) ** -0.5)
    return w


def fuse_for_qwen3_next(w, layer):
    """Pack Qwen3.5's four DeltaNet projections into Qwen3-Next's grouped in_proj_qkvz / in_proj_ba."""
    c = TINY
    nk, nv, dk, dv = (c["linear_num_key_heads"], c["linear_num_value_heads"],
                      c["linear_key_head_dim"], c["linear_value_head_dim"])
    H, r = c["hidden_size"], nv // nk
    d = "layers.%d.linear_attn." % layer

    def rows(name):
        shape, flat, _ = w.pop(d + name)
        return [flat[i * H:(i + 1) * H] for i in range(shape[0])]

    qkv, z, b, a = rows("in_proj_qkv.weight"), rows("in_proj_z.weight"), rows("in_proj_b.weight"), rows("in_proj_a.weight")
    q, k, v = qkv[:nk * dk], qkv[nk * dk:2 * nk * dk], qkv[2 * nk * dk:]
    qkvz, ba = [], []
    for g in range(nk):
        qkvz += q[g * dk:(g + 1) * dk] + k[g * dk:(g + 1) * dk] + v[g * r * dv:(g + 1) * r * dv] + z[g * r * dv:(g + 1) * r * dv]
        ba += b[g * r:(g + 1) * r] + a[g * r:(g + 1) * r]
    w[d + "in_proj_qkvz.weight"] = ([len(qkvz), H], [x for row in qkvz for x in row], "F32")
    w[d + "in_proj_ba.weight"] = ([len(ba), H], [x for row in ba for x in row], "F32")


def write_model(directory, config, weights, prefix, extra=None):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    tensors = {prefix + k: v for k, v in weights.items()}
    tensors.update(extra or {})
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors)


def max_abs_diff(a, b):
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def self_test():
    failures = []

    def check(name, ok, detail=""):
        print("%-62s %s %s" % (name, "ok" if ok else "FAIL", detail))
        if not ok:
            failures.append(name)

    # 1. dtype decoding against hand-made bit patterns
    check("decode F32/F16/BF16",
          decode_floats(struct.pack("<2f", 1.5, -0.25), "F32") == [1.5, -0.25]
          and decode_floats(bytes.fromhex("003c00c0"), "F16") == [1.0, -2.0]
          and decode_floats(bytes.fromhex("803fccbd"), "BF16") == [1.0, -0.099609375])

    # 2. text-only mRoPE equals plain RoPE (also with the 0.8B shape: hd 256, factor 0.25, [11,11,10])
    worst = 0.0
    for hd, section in ((16, [11, 11, 10]), (256, [11, 11, 10]), (64, [4, 6, 6])):
        inv = inv_frequencies({"rotary_dim": int(hd * 0.25), "rope_theta": 1e7})
        for p in (0, 1, 7, 1000):
            worst = max([worst] + [abs(x - p * f) for x, f in zip(mrope_angles(inv, p, p, p, section), inv)])
    check("mRoPE with t = h = w = p gives p * inv_freq", worst == 0.0)

    root = tempfile.mkdtemp(prefix="qwen3_5_ref_selftest_")
    weights = tiny_weights(1234)
    tokens = [3, 17, 42, 0, 9, 9, 31, 5, 48, 22, 11]

    # model A: multimodal-style nested config, model.language_model.* names, tied head
    text_a = dict(TINY, layer_types=["linear_attention"] * 3 + ["full_attention"],
                  rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                   "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10],
                                   "mrope_interleaved": True})
    dir_a = os.path.join(root, "tiny_a")
    write_model(dir_a, {"model_type": "qwen3_5", "tie_word_embeddings": True, "text_config": text_a},
                weights, "model.language_model.",
                extra={"mtp.fc.weight": ([2, 2], [0.0] * 4, "F32"),
                       "model.visual.patch_embed.proj.bias": ([2], [0.0] * 2, "F32")})
    model_a = load_model(dir_a)
    record = {}
    logits_a = run_model(model_a, tokens, record)
    finite = all(math.isfinite(v) for row in logits_a for v in row)
    spread = max(max(r) - min(r) for r in logits_a)
    check("model A loads and runs (%d positions x %d logits)" % (len(logits_a), len(logits_a[0])),
          finite and spread > 1e-3, "max spread %.3g" % spread)

    # 3. causality: change the tokens after position 5
    cut = 5
    changed = tokens[:cut + 1] + [(t + 7) % TINY["vocab_size"] for t in tokens[cut + 1:]]
    logits_c = run_model(model_a, changed)
    check("causality: positions <= %d unchanged" % cut, logits_c[:cut + 1] == logits_a[:cut + 1])
    check("causality: later positions do change", max_abs_diff(logits_c[cut + 1:], logits_a[cut + 1:]) > 1e-6)

    # 4. chunked gated delta rule vs the recurrence, per DeltaNet layer
    worst = 0.0
    for li, pairs in sorted(record.items()):
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        for chunk, split in ((4, None), (4, 6), (3, None), (len(xs), None)):
            worst = max(worst, max_abs_diff(deltanet_sequence_chunked(model_a["layers"][li], model_a["cfg"],
                                                                      xs, chunk, split), ys))
    scale = max(abs(v) for pairs in record.values() for _, y in pairs for v in y)
    check("chunked (4, 4+split, 3, whole) == recurrent, %d layers" % len(record), worst <= 1e-10,
          "max |diff| %.2e (outputs up to %.2g)" % (worst, scale))

    # 5. flat text config, model.* names, explicit untied lm_head, legacy rope keys, interval rule
    text_b = dict(TINY, rope_theta=10000000.0, partial_rotary_factor=0.25, full_attention_interval=4,
                  tie_word_embeddings=False, model_type="qwen3_5_text")
    dir_b = os.path.join(root, "tiny_b")
    write_model(dir_b, text_b, weights, "model.",
                extra={"lm_head.weight": weights["embed_tokens.weight"]})
    check("flat config / model.* / untied head == model A", run_model(load_model(dir_b), tokens) == logits_a)

    # 6. Qwen3-Next fused in_proj_qkvz / in_proj_ba decode to the same projections
    fused = dict(weights)
    for li in range(3):
        fuse_for_qwen3_next(fused, li)
    dir_c = os.path.join(root, "tiny_c")
    write_model(dir_c, dict(text_a, tie_word_embeddings=True), fused, "model.")
    check("Qwen3-Next fused qkvz/ba layout == model A", run_model(load_model(dir_c), tokens) == logits_a)

    # 7. the command line writes the JSON the C++ tests read
    out_path = os.path.join(root, "out.json")
    main([dir_a, "--tokens", ",".join(map(str, tokens)), "--out", out_path])
    with open(out_path) as f:
        doc = json.load(f)
    check("CLI JSON round-trips the logits exactly",
          doc["model"] == "tiny_a" and doc["tokens"] == tokens and doc["logits"] == logits_a)

    for sub in ("tiny_a", "tiny_b", "tiny_c"):
        for name in os.listdir(os.path.join(root, sub)):
            os.remove(os.path.join(root, sub, name))
        os.rmdir(os.path.join(root, sub))
    os.remove(out_path)
    os.rmdir(root)

    print("self-test: %s" % ("PASSED" if not failures else "FAILED (%s)" % ", ".join(failures)))
    return 0 if not failures else 1


# --------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="float64 reference logits for a Qwen3.5 text model")
    parser.add_argument("model_dir", nargs="?", help="directory with config.json and *.safetensors")
    parser.add_argument("--tokens", help="comma-separated token ids")
    parser.add_argument("--out", help="output JSON file (default: stdout)")
    parser.add_argument("--self-test", action="store_true", help="build a tiny random model and check invariants")
    args = parser.parse_args(argv)

    if args.self_test:
        return self_test()
    if not args.model_dir or args.tokens is None:
        parser.error("MODEL_DIR and --tokens are required (or use --self-test)")
    tokens = [int(t) for t in args.tokens.replace(" ", "").split(",") if t != ""]
    if not tokens:
        parser.error("--tokens is empty")

    model = load_model(args.model_dir)
    logits = run_model(model, tokens)
    if not all(math.isfinite(v) for row in logits for v in row):
        raise ArithmeticError("non-finite logits")
    doc = {"model": os.path.basename(os.path.normpath(args.model_dir)), "tokens": tokens, "logits": logits}
    text = json.dumps(doc)  # floats are written with repr: shortest string that round-trips
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
