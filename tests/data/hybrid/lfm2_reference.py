#!/usr/bin/env python3
"""Double-precision reference for LFM2 / LFM2.5 (transformers `Lfm2ForCausalLM`, model_type "lfm2").

Pure Python 3, standard library only (no numpy, no torch). It reads a Hugging Face
checkpoint directory (config.json + *.safetensors, optionally sharded through
model.safetensors.index.json) and writes the logits of EVERY position of a token
sequence, computed in float64 in one causal pass over the whole sequence.

Formulas follow (facts only, own code) the transformers sources:
  src/transformers/models/lfm2/modeling_lfm2.py
  src/transformers/models/lfm2/configuration_lfm2.py
  src/transformers/modeling_rope_utils.py     (default RoPE; rope_theta precedence)

Summary of the model (position p, hidden size H):
  h = embed_tokens[token]
  per layer:  h += operator(rms(h, operator_norm)) ;  h += w2(silu(w1 g) * w3 g), g = rms(h, ffn_norm)
  logits = lm_head(rms(h, embedding_norm))        (embedding_norm is the FINAL norm)
  rms(x, w) = x / sqrt(mean(x^2) + norm_eps) * w   (plain weight, not 1 + w)
  conv operator ("conv" layers):
      [B | C | x] = in_proj(x) (each H wide, in that order);  u = B * x
      z[t] = sum_k conv[c, 0, k] * u[t - (L-1) + k]   (depthwise, causal, zeros before the
             start; tap L-1 is the current token; L = conv_L_cache)
      out_proj(C * z)
  attention operator ("full_attention" layers):
      q, k, v projections; q_layernorm / k_layernorm = rms per head (head_dim wide) BEFORE
      RoPE; rotate-half RoPE with inv_freq[i] = theta^(-2i/head_dim); GQA (query head h uses
      key/value head h // (heads / kv_heads)); softmax(q.k * head_dim^-0.5) over positions
      <= p; out_proj.

Usage:
  python3 lfm2_reference.py MODEL_DIR --tokens 1,2,3 [--out FILE.json]
  python3 lfm2_reference.py --self-test
Output JSON: {"model": basename(MODEL_DIR), "tokens": [...], "logits": [[V floats], ...]}.
"""

import argparse
import json
import math
import os
import random
import struct
import sys
import tempfile


# --------------------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------------------

def read_safetensors_header(path):
    """Return (tensor header dict, absolute file offset where the data section starts)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return header, 8 + n


def decode_floats(raw, dtype):
    """Raw little-endian bytes -> list of Python floats (every conversion is exact)."""
    if dtype == "F32":
        return list(struct.unpack("<%df" % (len(raw) // 4), raw))
    if dtype == "F64":
        return list(struct.unpack("<%dd" % (len(raw) // 8), raw))
    if dtype == "F16":
        return list(struct.unpack("<%de" % (len(raw) // 2), raw))
    if dtype == "BF16":
        # a bf16 value is the upper 16 bits of the float32 with the same value
        n = len(raw) // 2
        bits = struct.unpack("<%dH" % n, raw)
        return list(struct.unpack("<%df" % n, struct.pack("<%dI" % n, *[b << 16 for b in bits])))
    raise ValueError("unsupported safetensors dtype %r" % dtype)


def checkpoint_files(model_dir):
    """The shard list from model.safetensors.index.json if there is one, else every *.safetensors."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            names = sorted(set(json.load(f)["weight_map"].values()))
    else:
        names = sorted(x for x in os.listdir(model_dir) if x.endswith(".safetensors"))
    if not names:
        raise FileNotFoundError("no .safetensors file in %s" % model_dir)
    return [os.path.join(model_dir, x) for x in names]


class TensorStore:
    """Name -> (file, data start, header entry) over all shards; tensors are read on demand."""

    def __init__(self, model_dir):
        self.entries = {}
        for path in checkpoint_files(model_dir):
            header, data_start = read_safetensors_header(path)
            for name, info in header.items():
                if name in self.entries:
                    raise ValueError("tensor %s appears in more than one shard" % name)
                self.entries[name] = (path, data_start, info)

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
    """Floats -> bytes; only the self-test writes checkpoints."""
    n = len(values)
    if dtype == "F32":
        return struct.pack("<%df" % n, *values)
    if dtype == "F16":
        return struct.pack("<%de" % n, *values)
    if dtype == "BF16":
        bits = struct.unpack("<%dI" % n, struct.pack("<%df" % n, *values))
        # round half to even on the 16 dropped bits (NaN/inf never occur here)
        return struct.pack("<%dH" % n, *[((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF for b in bits])
    raise ValueError(dtype)


def write_safetensors(path, tensors):
    """tensors: {name: (shape, flat values, dtype)} -> one safetensors file."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        shape, values, dtype = tensors[name]
        blob = encode_floats(values, dtype)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # the format recommends 8-byte aligned data
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


# --------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------

def rope_theta_of(raw):
    """rope_parameters (or legacy rope_scaling) dict first, then `theta`, then `rope_theta`, then 1e6."""
    rope = raw.get("rope_parameters")
    if not isinstance(rope, dict):
        rope = raw.get("rope_scaling")
    rope = dict(rope) if isinstance(rope, dict) else {}
    if isinstance(rope.get("full_attention"), dict):  # per-layer-type form of rope_parameters
        rope = dict(rope["full_attention"])
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
        raise ValueError("rope_type %r is not implemented by this reference" % rope_type)
    prf = rope.get("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0))
    if prf is not None and float(prf) != 1.0:
        raise ValueError("partial_rotary_factor %r is not implemented (LFM2 rotates all dims)" % prf)
    theta = rope.get("rope_theta")
    if not theta:
        # the config class takes `theta` (original LFM2 key) over `rope_theta`
        theta = raw.get("theta", raw.get("rope_theta", 1000000.0))
    return float(theta)


def mlp_width(intermediate, auto_adjust, multiplier, multiple_of):
    """Feed-forward width exactly as the MLP constructor derives it."""
    width = intermediate
    if auto_adjust:
        width = int(2 * width / 3)
        if multiplier is not None:
            width = int(multiplier * width)
            width = multiple_of * ((width + multiple_of - 1) // multiple_of)
    return width


def parse_config(raw):
    """config.json dict -> flat dict of what the forward needs, with Lfm2Config's defaults."""
    cfg = {
        "vocab_size": raw.get("vocab_size", 65536),
        "hidden_size": raw.get("hidden_size", 2560),
        "num_hidden_layers": raw.get("num_hidden_layers", 32),
        "num_attention_heads": raw.get("num_attention_heads", 32),
        "num_key_value_heads": raw.get("num_key_value_heads", 8),
        "norm_eps": float(raw.get("norm_eps", 1e-5)),
        "conv_bias": bool(raw.get("conv_bias", False)),
        "conv_L_cache": raw.get("conv_L_cache", 3),
    }
    # original LFM2 key `block_ff_dim` wins over intermediate_size
    cfg["intermediate_size"] = raw.get("block_ff_dim", raw.get("intermediate_size", 12288))
    cfg["ff_width"] = mlp_width(cfg["intermediate_size"], raw.get("block_auto_adjust_ff_dim", True),
                                raw.get("block_ffn_dim_multiplier", 1.0), raw.get("block_multiple_of", 256))
    head_dim = raw.get("head_dim")  # the attention reads it only if present
    cfg["head_dim"] = head_dim if head_dim else cfg["hidden_size"] // cfg["num_attention_heads"]
    if cfg["head_dim"] % 2:
        raise ValueError("odd head_dim %d cannot be rotated" % cfg["head_dim"])
    if cfg["num_attention_heads"] % cfg["num_key_value_heads"]:
        raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
    cfg["rope_theta"] = rope_theta_of(raw)
    # original LFM2 key `tie_embedding` wins over tie_word_embeddings; both default to tied
    cfg["tie_word_embeddings"] = bool(raw.get("tie_embedding", raw.get("tie_word_embeddings", True)))

    n = cfg["num_hidden_layers"]
    layer_types = raw.get("layer_types")
    if layer_types is None:
        idxs = raw.get("full_attn_idxs")
        idxs = list(range(n)) if idxs is None else idxs  # neither key: every layer is attention
        layer_types = ["full_attention" if i in idxs else "conv" for i in range(n)]
    if len(layer_types) < n:
        raise ValueError("layer_types has %d entries for %d layers" % (len(layer_types), n))
    kinds = []
    for t in layer_types[:n]:
        if t not in ("full_attention", "conv"):
            # transformers treats every name other than "full_attention" as a conv layer
            sys.stderr.write("warning: layer type %r taken as 'conv'\n" % t)
        kinds.append("attention" if t == "full_attention" else "conv")
    cfg["kinds"] = kinds
    return cfg


# --------------------------------------------------------------------------------------
# float64 helpers
# --------------------------------------------------------------------------------------

def dot(a, b):
    return math.fsum(x * y for x, y in zip(a, b))  # correctly rounded sum: slow but order-free


def matvec(rows, x, bias=None):
    out = [dot(row, x) for row in rows]
    if bias is not None:
        out = [o + c for o, c in zip(out, bias)]
    return out


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def silu(x):
    # x * sigmoid(x), written so exp never overflows
    if x >= 0:
        return x / (1.0 + math.exp(-x))
    e = math.exp(x)
    return x * e / (1.0 + e)


def rms_norm(x, weight, eps):
    inv = 1.0 / math.sqrt(math.fsum(v * v for v in x) / len(x) + eps)
    return [v * inv * w for v, w in zip(x, weight)]


def softmax(scores):
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = math.fsum(exps)
    return [e / total for e in exps]


def split_heads(vec, n, d):
    return [vec[i * d:(i + 1) * d] for i in range(n)]


# --------------------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------------------

def read_tensor(store, name, shape):
    """Tensor with a shape check: rows for 2-D / 3-D (trailing dims flattened), flat list for 1-D."""
    if not store.has(name):
        raise KeyError("missing tensor %s" % name)
    got = store.shape(name)
    if got != list(shape):
        raise ValueError("%s has shape %s, but config.json implies %s" % (name, got, list(shape)))
    flat = store.flat(name)
    if len(shape) == 1:
        return flat
    cols = math.prod(shape[1:])
    return [flat[r * cols:(r + 1) * cols] for r in range(shape[0])]


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = parse_config(json.load(f))
    store = TensorStore(model_dir)
    H, V, I, L = cfg["hidden_size"], cfg["vocab_size"], cfg["ff_width"], cfg["conv_L_cache"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    model = {"cfg": cfg, "embed": read_tensor(store, "model.embed_tokens.weight", [V, H]),
             "final_norm": read_tensor(store, "model.embedding_norm.weight", [H]), "layers": []}
    for i, kind in enumerate(cfg["kinds"]):
        p = "model.layers.%d." % i
        layer = {
            "kind": kind,
            "operator_norm": read_tensor(store, p + "operator_norm.weight", [H]),
            "ffn_norm": read_tensor(store, p + "ffn_norm.weight", [H]),
            "w1": read_tensor(store, p + "feed_forward.w1.weight", [I, H]),
            "w3": read_tensor(store, p + "feed_forward.w3.weight", [I, H]),
            "w2": read_tensor(store, p + "feed_forward.w2.weight", [H, I]),
        }
        if kind == "attention":
            a = p + "self_attn."
            layer.update(q=read_tensor(store, a + "q_proj.weight", [nh * hd, H]),
                         k=read_tensor(store, a + "k_proj.weight", [nkv * hd, H]),
                         v=read_tensor(store, a + "v_proj.weight", [nkv * hd, H]),
                         o=read_tensor(store, a + "out_proj.weight", [H, nh * hd]),
                         q_norm=read_tensor(store, a + "q_layernorm.weight", [hd]),
                         k_norm=read_tensor(store, a + "k_layernorm.weight", [hd]))
        else:
            c = p + "conv."
            layer.update(in_proj=read_tensor(store, c + "in_proj.weight", [3 * H, H]),
                         conv=read_tensor(store, c + "conv.weight", [H, 1, L]),
                         out_proj=read_tensor(store, c + "out_proj.weight", [H, H]))
            bias = cfg["conv_bias"]
            layer.update(in_bias=read_tensor(store, c + "in_proj.bias", [3 * H]) if bias else None,
                         conv_bias=read_tensor(store, c + "conv.bias", [H]) if bias else None,
                         out_bias=read_tensor(store, c + "out_proj.bias", [H]) if bias else None)
        model["layers"].append(layer)

    if cfg["tie_word_embeddings"]:
        # tied: the head IS the embedding matrix, whatever lm_head.weight may hold
        model["lm_head"] = model["embed"]
        if store.has("lm_head.weight") and read_tensor(store, "lm_head.weight", [V, H]) != model["embed"]:
            sys.stderr.write("warning: tied config but lm_head.weight differs; using embed_tokens\n")
    else:
        if not store.has("lm_head.weight"):
            raise KeyError("config says untied embeddings but lm_head.weight is missing")
        model["lm_head"] = read_tensor(store, "lm_head.weight", [V, H])
    return model


# --------------------------------------------------------------------------------------
# forward over a whole sequence
# --------------------------------------------------------------------------------------

def inv_frequencies(head_dim, theta):
    return [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]


def rope_rotate_half(x, pos, inv_freq):
    """out = x * cos + rotate_half(x) * sin, with rotate_half(x) = [-x2, x1] and angles repeated twice."""
    half = len(x) // 2
    cos = [math.cos(pos * f) for f in inv_freq]
    sin = [math.sin(pos * f) for f in inv_freq]
    first = [x[j] * cos[j] - x[j + half] * sin[j] for j in range(half)]
    second = [x[j + half] * cos[j] + x[j] * sin[j] for j in range(half)]
    return first + second


def attention_sequence(layer, cfg, xs):
    """Causal GQA attention of every position; xs are the operator_norm outputs."""
    nh, nkv, hd, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["norm_eps"]
    inv_freq = inv_frequencies(hd, cfg["rope_theta"])
    group = nh // nkv
    scale = hd ** -0.5
    qs, ks, vs = [], [], []
    for pos, x in enumerate(xs):
        # per-head RMSNorm first, rotation second (the order transformers uses)
        qs.append([rope_rotate_half(rms_norm(h, layer["q_norm"], eps), pos, inv_freq)
                   for h in split_heads(matvec(layer["q"], x), nh, hd)])
        ks.append([rope_rotate_half(rms_norm(h, layer["k_norm"], eps), pos, inv_freq)
                   for h in split_heads(matvec(layer["k"], x), nkv, hd)])
        vs.append(split_heads(matvec(layer["v"], x), nkv, hd))
    outs = []
    for t in range(len(xs)):
        heads = []
        for h in range(nh):
            g = h // group
            probs = softmax([dot(qs[t][h], ks[s][g]) * scale for s in range(t + 1)])
            heads += [math.fsum(probs[s] * vs[s][g][d] for s in range(t + 1)) for d in range(hd)]
        outs.append(matvec(layer["o"], heads))
    return outs


def short_conv_sequence(layer, cfg, xs):
    """Gated short convolution of every position, as a zero-padded full-sequence convolution."""
    H, L = cfg["hidden_size"], cfg["conv_L_cache"]
    bcx = [matvec(layer["in_proj"], x, layer["in_bias"]) for x in xs]
    gates_c = [row[H:2 * H] for row in bcx]
    u = [[b * v for b, v in zip(row[:H], row[2 * H:])] for row in bcx]  # B * x
    padded = [[0.0] * H for _ in range(L - 1)] + u  # Conv1d padding L-1, keep the first T outputs
    outs = []
    for t in range(len(xs)):
        z = [math.fsum(layer["conv"][c][k] * padded[t + k][c] for k in range(L)) for c in range(H)]
        if layer["conv_bias"] is not None:
            z = add(z, layer["conv_bias"])
        y = [cv * zv for cv, zv in zip(gates_c[t], z)]
        outs.append(matvec(layer["out_proj"], y, layer["out_bias"]))
    return outs


def feed_forward(layer, x):
    gate = [silu(v) for v in matvec(layer["w1"], x)]
    up = matvec(layer["w3"], x)
    return matvec(layer["w2"], [g * u for g, u in zip(gate, up)])


def run_model(model, tokens):
    """Logits (float64) of every position of `tokens`, one causal pass over the sequence."""
    cfg = model["cfg"]
    eps = cfg["norm_eps"]
    for t in tokens:
        if not 0 <= t < cfg["vocab_size"]:
            raise ValueError("token %d outside the vocabulary (size %d)" % (t, cfg["vocab_size"]))
    hs = [list(model["embed"][t]) for t in tokens]
    for layer in model["layers"]:
        normed = [rms_norm(h, layer["operator_norm"], eps) for h in hs]
        if layer["kind"] == "attention":
            mixed = attention_sequence(layer, cfg, normed)
        else:
            mixed = short_conv_sequence(layer, cfg, normed)
        hs = [add(h, m) for h, m in zip(hs, mixed)]
        hs = [add(h, feed_forward(layer, rms_norm(h, layer["ffn_norm"], eps))) for h in hs]
    return [matvec(model["lm_head"], rms_norm(h, model["final_norm"], eps)) for h in hs]


# --------------------------------------------------------------------------------------
# self-test: a second, token-by-token implementation and consistency checks
# --------------------------------------------------------------------------------------

def rope_complex(x, pos, head_dim, theta):
    """Rotation written as complex multiplication of the pairs (x[j], x[j + d/2])."""
    half = head_dim // 2
    out = [0.0] * head_dim
    for j in range(half):
        z = complex(x[j], x[j + half]) * complex(math.cos(pos * theta ** (-2.0 * j / head_dim)),
                                                math.sin(pos * theta ** (-2.0 * j / head_dim)))
        out[j], out[j + half] = z.real, z.imag
    return out


def step_model(model, tokens):
    """Token-by-token forward with carried state: a window of the L-1 previous B*x rows per conv
    layer, growing key / value lists per attention layer."""
    cfg = model["cfg"]
    H, L, eps = cfg["hidden_size"], cfg["conv_L_cache"], cfg["norm_eps"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    state = [{"window": [[0.0] * H for _ in range(L - 1)]} if ly["kind"] == "conv" else {"k": [], "v": []}
             for ly in model["layers"]]
    logits = []
    for pos, tok in enumerate(tokens):
        h = list(model["embed"][tok])
        for layer, st in zip(model["layers"], state):
            x = rms_norm(h, layer["operator_norm"], eps)
            if layer["kind"] == "conv":
                proj = matvec(layer["in_proj"], x, layer["in_bias"])
                b, c, v = proj[:H], proj[H:2 * H], proj[2 * H:]
                u = [bi * vi for bi, vi in zip(b, v)]
                taps = st["window"] + [u]  # oldest first; the newest meets tap L-1
                z = [math.fsum(taps[k][ch] * layer["conv"][ch][k] for k in range(L)) for ch in range(H)]
                if layer["conv_bias"] is not None:
                    z = [zi + bi for zi, bi in zip(z, layer["conv_bias"])]
                st["window"] = taps[1:]
                out = matvec(layer["out_proj"], [ci * zi for ci, zi in zip(c, z)], layer["out_bias"])
            else:
                q = [rope_complex(rms_norm(hq, layer["q_norm"], eps), pos, hd, cfg["rope_theta"])
                     for hq in split_heads(matvec(layer["q"], x), nh, hd)]
                st["k"].append([rope_complex(rms_norm(hk, layer["k_norm"], eps), pos, hd, cfg["rope_theta"])
                                for hk in split_heads(matvec(layer["k"], x), nkv, hd)])
                st["v"].append(split_heads(matvec(layer["v"], x), nkv, hd))
                merged = []
                for head in range(nh):
                    g = head * nkv // nh  # same grouping, written differently
                    w = softmax([dot(q[head], ks[g]) / math.sqrt(hd) for ks in st["k"]])
                    merged += [math.fsum(wi * vs[g][d] for wi, vs in zip(w, st["v"])) for d in range(hd)]
                out = matvec(layer["o"], merged)
            h = [a + b for a, b in zip(h, out)]
            f = rms_norm(h, layer["ffn_norm"], eps)
            act = [silu(a) * b for a, b in zip(matvec(layer["w1"], f), matvec(layer["w3"], f))]
            h = [a + b for a, b in zip(h, matvec(layer["w2"], act))]
        logits.append(matvec(model["lm_head"], rms_norm(h, model["final_norm"], eps)))
    return logits


def tiny_checkpoint(config, seed, dtype="F32", untied=False):
    """Random LFM2 tensors for `config`: {name: (shape, values, dtype)}."""
    rng = random.Random(seed)
    cfg = parse_config(config)
    H, V, I, L = cfg["hidden_size"], cfg["vocab_size"], cfg["ff_width"], cfg["conv_L_cache"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    def rnd(shape, scale, center=0.0):
        return (shape, [center + rng.gauss(0.0, scale) for _ in range(math.prod(shape))], dtype)

    w = {"model.embed_tokens.weight": rnd([V, H], 1.0), "model.embedding_norm.weight": rnd([H], 0.2, 1.0)}
    if untied:
        w["lm_head.weight"] = rnd([V, H], H ** -0.5)
    for i, kind in enumerate(cfg["kinds"]):
        p = "model.layers.%d." % i
        w[p + "operator_norm.weight"] = rnd([H], 0.2, 1.0)
        w[p + "ffn_norm.weight"] = rnd([H], 0.2, 1.0)
        w[p + "feed_forward.w1.weight"] = rnd([I, H], H ** -0.5)
        w[p + "feed_forward.w3.weight"] = rnd([I, H], H ** -0.5)
        w[p + "feed_forward.w2.weight"] = rnd([H, I], I ** -0.5)
        if kind == "attention":
            a = p + "self_attn."
            w[a + "q_proj.weight"] = rnd([nh * hd, H], H ** -0.5)
            w[a + "k_proj.weight"] = rnd([nkv * hd, H], H ** -0.5)
            w[a + "v_proj.weight"] = rnd([nkv * hd, H], H ** -0.5)
            w[a + "out_proj.weight"] = rnd([H, nh * hd], (nh * hd) ** -0.5)
            w[a + "q_layernorm.weight"] = rnd([hd], 0.2, 1.0)
            w[a + "k_layernorm.weight"] = rnd([hd], 0.2, 1.0)
        else:
            c = p + "conv."
            w[c + "in_proj.weight"] = rnd([3 * H, H], H ** -0.5 * 1.5)
            w[c + "conv.weight"] = rnd([H, 1, L], 0.6)
            w[c + "out_proj.weight"] = rnd([H, H], H ** -0.5 * 1.5)
            if cfg["conv_bias"]:
                w[c + "in_proj.bias"] = rnd([3 * H], 0.3)
                w[c + "conv.bias"] = rnd([H], 0.3)
                w[c + "out_proj.bias"] = rnd([H], 0.3)
    return w


def write_model(directory, config, tensors, shards=1):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    if shards == 1:
        write_safetensors(os.path.join(directory, "model.safetensors"), tensors)
        return
    names, weight_map = sorted(tensors), {}
    for s in range(shards):
        file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = {n: tensors[n] for n in names[s::shards]}
        write_safetensors(os.path.join(directory, file), part)
        weight_map.update({n: file for n in part})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)


def remove_tree(root):
    for sub, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            os.remove(os.path.join(sub, name))
        os.rmdir(sub)


def max_abs_diff(a, b):
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


TINY_A = {  # the brief's shape: conv / attention / conv, tied head, no conv bias
    "model_type": "lfm2", "architectures": ["Lfm2ForCausalLM"],
    "vocab_size": 50, "hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "norm_eps": 1e-5, "conv_L_cache": 3,
    "conv_bias": False, "block_auto_adjust_ff_dim": True, "block_ffn_dim_multiplier": 1.0,
    "block_multiple_of": 16, "layer_types": ["conv", "full_attention", "conv"],
    "rope_theta": 1000000.0, "tie_word_embeddings": True,
}

TINY_B = {  # original LFM2 key names, conv bias, untied head, 4-tap conv, no layer_types
    "model_type": "lfm2", "vocab_size": 50, "hidden_size": 32, "block_ff_dim": 100,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 1, "norm_eps": 1e-6,
    "conv_L_cache": 4, "conv_bias": True, "block_auto_adjust_ff_dim": True,
    "block_ffn_dim_multiplier": 1.5, "block_multiple_of": 8, "full_attn_idxs": [1, 3],
    "theta": 10000.0, "tie_embedding": False,
}


def self_test():
    failures = []

    def check(name, ok, detail=""):
        print("%-64s %s %s" % (name, "ok" if ok else "FAIL", detail))
        if not ok:
            failures.append(name)

    check("decode F32 / F16 / BF16 bit patterns",
          decode_floats(struct.pack("<2f", 1.5, -0.25), "F32") == [1.5, -0.25]
          and decode_floats(bytes.fromhex("003c00c0"), "F16") == [1.0, -2.0]
          and decode_floats(bytes.fromhex("803fccbd"), "BF16") == [1.0, -0.099609375])

    # hand-computed: 6656 -> 4437 -> 4608 ; 12288 -> 8192 ; 100 -> 66 -> 99 -> 104 ; no adjust -> 96
    check("MLP width rule", (mlp_width(6656, True, 1.0, 256), mlp_width(12288, True, 1.0, 256),
                             mlp_width(100, True, 1.5, 8), mlp_width(100, True, None, 8),
                             mlp_width(96, False, 1.0, 16)) == (4608, 8192, 104, 66, 96))

    cfg_b = parse_config(TINY_B)
    check("config aliases (block_ff_dim, theta, tie_embedding, full_attn_idxs)",
          cfg_b["ff_width"] == 104 and cfg_b["rope_theta"] == 10000.0 and not cfg_b["tie_word_embeddings"]
          and cfg_b["kinds"] == ["conv", "attention", "conv", "attention"]
          and parse_config({"num_hidden_layers": 2})["kinds"] == ["attention", "attention"]
          and parse_config({"rope_parameters": {"rope_type": "default", "rope_theta": 5.0},
                            "rope_theta": 7.0})["rope_theta"] == 5.0)

    # RoPE: both formulations agree, and q.k depends only on the position difference
    rng = random.Random(7)
    q, k = [rng.gauss(0, 1) for _ in range(16)], [rng.gauss(0, 1) for _ in range(16)]
    inv = inv_frequencies(16, 10000.0)
    worst = max(abs(a - b) for p in (0, 3, 50) for a, b in zip(rope_rotate_half(q, p, inv),
                                                                  rope_complex(q, p, 16, 10000.0)))
    rel = abs(dot(rope_rotate_half(q, 9, inv), rope_rotate_half(k, 4, inv))
              - dot(rope_rotate_half(q, 25, inv), rope_rotate_half(k, 20, inv)))
    check("RoPE: rotate-half == complex pairs, relative positions", worst < 1e-14 and rel < 1e-12,
          "%.1e / %.1e" % (worst, rel))

    root = tempfile.mkdtemp(prefix="lfm2-check-")
    tokens = [3, 17, 42, 0, 9, 9, 31, 5, 48, 22, 11, 7, 7, 40]
    try:
        for label, config, untied, dtype in (("A", TINY_A, False, "F32"), ("B", TINY_B, True, "BF16")):
            tensors = tiny_checkpoint(config, seed=100 + ord(label), dtype=dtype, untied=untied)
            directory = os.path.join(root, "tiny_" + label.lower())
            write_model(directory, config, tensors)
            model = load_model(directory)
            logits = run_model(model, tokens)
            spread = max(max(r) - min(r) for r in logits)
            check("model %s runs (%d x %d logits, %s)" % (label, len(logits), len(logits[0]), dtype),
                  all(math.isfinite(v) for r in logits for v in r) and spread > 1e-2, "spread %.3g" % spread)

            worst = max_abs_diff(step_model(model, tokens), logits)
            check("model %s: token-by-token == whole sequence (1e-12)" % label, worst <= 1e-12,
                  "max |diff| %.2e" % worst)

            for cut in (0, 4, 9):
                changed = tokens[:cut + 1] + [(t + 13) % config["vocab_size"] for t in tokens[cut + 1:]]
                other = run_model(model, changed)
                check("model %s causality at %d: earlier rows identical, later differ" % (label, cut),
                      other[:cut + 1] == logits[:cut + 1] and max_abs_diff(other[cut + 1:], logits[cut + 1:]) > 1e-6)

            # the conv window must reach exactly L-1 tokens back through a single conv layer:
            # perturbing the position just outside it changes nothing at that layer's output
            if label == "A":
                first = model["layers"][0]
                xs = [rms_norm(model["embed"][t], first["operator_norm"], model["cfg"]["norm_eps"]) for t in tokens[:6]]
                base = short_conv_sequence(first, model["cfg"], xs)
                xs2 = [list(x) for x in xs]
                xs2[2] = [v + 1.0 for v in xs2[2]]
                moved = short_conv_sequence(first, model["cfg"], xs2)
                L = model["cfg"]["conv_L_cache"]
                check("conv reach: position 2 affects outputs 2..%d only" % (2 + L - 1),
                      moved[:2] == base[:2] and moved[2 + L:] == base[2 + L:]
                      and all(moved[t] != base[t] for t in range(2, 2 + L)))

                sharded = os.path.join(root, "tiny_a_sharded")
                write_model(sharded, config, tensors, shards=3)
                check("sharded index checkpoint == single file", run_model(load_model(sharded), tokens) == logits)

                bad = os.path.join(root, "tiny_a_bad")
                write_model(bad, dict(config, intermediate_size=120), tensors)
                try:
                    load_model(bad)
                    check("config / weight shape mismatch is refused", False)
                except ValueError as e:
                    check("config / weight shape mismatch is refused", "feed_forward.w1" in str(e))

                out_path = os.path.join(root, "out.json")
                main([directory, "--tokens", ",".join(map(str, tokens)), "--out", out_path])
                with open(out_path) as f:
                    doc = json.load(f)
                check("CLI JSON round-trips the logits exactly",
                      doc["model"] == "tiny_a" and doc["tokens"] == tokens and doc["logits"] == logits)
    finally:
        remove_tree(root)

    print("self-test: %s" % ("PASSED" if not failures else "FAILED (%s)" % ", ".join(failures)))
    return 0 if not failures else 1


# --------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="float64 reference logits for an LFM2 / LFM2.5 model")
    parser.add_argument("model_dir", nargs="?", help="directory with config.json and *.safetensors")
    parser.add_argument("--tokens", help="comma-separated token ids")
    parser.add_argument("--out", help="output JSON file (default: stdout)")
    parser.add_argument("--self-test", action="store_true", help="build tiny random models and check invariants")
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
    text = json.dumps(doc)  # json writes floats with repr: the shortest string that round-trips
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
