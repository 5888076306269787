#!/usr/bin/env python3
"""Double-precision reference for the TEXT part of Gemma 4 (transformers `gemma4` / `gemma4_text`).

Pure Python 3, standard library only (no numpy, no torch). It reads a Hugging Face
checkpoint directory (config.json + *.safetensors, optionally sharded through
model.safetensors.index.json) and writes the logits of EVERY position of a token
sequence, computed in float64 token by token with a key / value cache per layer.

Formulas follow (facts only, own code) the transformers sources:
  src/transformers/models/gemma4/modeling_gemma4.py
  src/transformers/models/gemma4/configuration_gemma4.py
  src/transformers/modeling_rope_utils.py     (_compute_proportional_rope_parameters)

Summary of the model (token t at position p, hidden size H, L layers, per-layer width P):
  rms(x, w) = x * (mean(x^2) + eps)^-0.5 * w    (plain weight, not 1 + w as in Gemma 3;
                                                 v_norm has no weight at all)
  h = embed_tokens[t] * sqrt(H)                  (the scale rounded to the table's dtype)
  per-layer inputs (P > 0), one row of P values per layer i:
      pli[i] = (rms(row i of per_layer_model_projection(h) * H^-0.5, per_layer_projection_norm)
                + row i of embed_tokens_per_layer[t] * sqrt(P)) * 2^-0.5
  layer i (head size: global_head_dim on full_attention layers, head_dim on sliding ones):
      a = rms(h, input_layernorm)
      q = rope(rms(q_proj a, q_norm)) per head
      own K/V: k = rope(rms(k_proj a, k_norm)), v = rms(v_proj a) per head, appended to the
          layer's cache; the last num_kv_shared_layers layers have none and read the cache
          of the last earlier own-K/V layer of the same type
      attention: softmax(q.k) (scale 1, no softcap), query head h reads K/V head
          h // (heads / kv heads); causal; sliding layers see the last sliding_window
          positions (p included)
      h = h + rms(o_proj(attention), post_attention_layernorm)
      h = h + rms(down(gelu_tanh(gate x) * up x), post_feedforward_layernorm),
          x = rms(h, pre_feedforward_layernorm)
      h = h + rms(per_layer_projection(gelu_tanh(per_layer_input_gate h) * pli[i]),
                  post_per_layer_input_norm)
      h = h * layer_scalar                       (the whole state, residual included)
  logits = lm_head(rms(h, norm)); then cap * tanh(logits / cap) if final_logit_softcapping
  rope: rotate-half pairs (j, j + d/2) over the whole head of d dims, angle p * f_j;
      "default": f_j = theta^(-2j/d);
      "proportional": f_j = theta^(-2j/d) for the first int(partial_rotary_factor * d // 2)
      pairs (exponent over the WHOLE head), 0 for the rest (those dims pass unchanged),
      all divided by "factor"
  gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))

Usage:
  python3 gemma4_reference.py MODEL_DIR --tokens 1,2,3 [--out FILE.json]
  python3 gemma4_reference.py --self-test
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


def encode_floats(values, dtype):
    """Floats -> bytes, rounding to nearest even (the self-test's writer and the dtype rounding
    of the embedding scales)."""
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

    def dtype(self, name):
        return self.entries[name][2]["dtype"]

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

LAYER_KINDS = ("sliding_attention", "full_attention")

DEFAULT_ROPE = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
}


def parse_rope(params, kind):
    """One layer type's rope_parameters entry -> {rope_type, rope_theta, partial_rotary_factor, factor}."""
    if not isinstance(params, dict):
        raise ValueError("rope_parameters has no entry for %r (Gemma 4 keys it by layer type)" % kind)
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in ("default", "proportional"):
        raise ValueError("rope_type %r is not implemented by this reference" % rope_type)
    if "rope_theta" not in params:
        raise ValueError("rope_parameters[%r] has no rope_theta" % kind)
    fraction = float(params.get("partial_rotary_factor", 1.0))
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("partial_rotary_factor %r outside [0, 1]" % fraction)
    return {"rope_type": rope_type, "rope_theta": float(params["rope_theta"]),
            "partial_rotary_factor": fraction, "factor": float(params.get("factor", 1.0))}


def parse_config(raw):
    """config.json dict -> flat dict of what the text model needs, with Gemma4TextConfig's defaults."""
    nested = isinstance(raw.get("text_config"), dict)
    text = raw["text_config"] if nested else raw

    for key in ("attention_k_eq_v", "enable_moe_block", "attention_bias"):
        if text.get(key):
            raise NotImplementedError("%s = true is not implemented by this reference" % key)
    if text.get("use_bidirectional_attention") == "all":
        raise NotImplementedError("use_bidirectional_attention = 'all' (non-causal text) is not implemented")
    act = text.get("hidden_activation", "gelu_pytorch_tanh")
    if act != "gelu_pytorch_tanh":
        raise NotImplementedError("hidden_activation %r is not implemented (Gemma 4 uses gelu_pytorch_tanh)" % act)

    cfg = {
        "vocab_size": text.get("vocab_size", 262144),
        "hidden_size": text.get("hidden_size", 2304),
        "intermediate_size": text.get("intermediate_size", 9216),
        "num_hidden_layers": text.get("num_hidden_layers", 30),
        "num_attention_heads": text.get("num_attention_heads", 8),
        "num_key_value_heads": text.get("num_key_value_heads", 4),
        "head_dim": text.get("head_dim", 256),
        "global_head_dim": text.get("global_head_dim", 512),
        "rms_norm_eps": float(text.get("rms_norm_eps", 1e-6)),
        "sliding_window": text.get("sliding_window", 512),
        "final_logit_softcapping": text.get("final_logit_softcapping"),
        "vocab_size_per_layer_input": text.get("vocab_size_per_layer_input", 262144),
        "hidden_size_per_layer_input": text.get("hidden_size_per_layer_input", 256) or 0,
        "num_kv_shared_layers": text.get("num_kv_shared_layers", 0) or 0,
        "use_double_wide_mlp": bool(text.get("use_double_wide_mlp", False)),
    }
    # The class that owns lm_head decides tying: the top level of the multimodal wrapper.
    if nested:
        cfg["tie_word_embeddings"] = bool(raw.get("tie_word_embeddings", text.get("tie_word_embeddings", True)))
    else:
        cfg["tie_word_embeddings"] = bool(text.get("tie_word_embeddings", True))

    L = cfg["num_hidden_layers"]
    layer_types = text.get("layer_types")
    if layer_types is None:
        layer_types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(L)]
    layer_types = list(layer_types)
    if len(layer_types) != L:
        raise ValueError("layer_types has %d entries for %d layers" % (len(layer_types), L))
    for t in layer_types:
        if t not in LAYER_KINDS:
            raise ValueError("unsupported layer type %r" % t)
    layer_types[-1] = "full_attention"  # the config class forces this (with a warning)
    cfg["layer_types"] = layer_types

    # Per-layer head geometry. Newer transformers write a per_layer_config of overrides
    # (and then ignore global_head_dim); older ones give full layers global_head_dim.
    overrides = text.get("per_layer_config")
    geometry = []
    for i, kind in enumerate(layer_types):
        nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        if overrides is not None:
            over = overrides.get(str(i)) or {}
            nh = over.get("num_attention_heads", nh)
            nkv = over.get("num_key_value_heads", nkv)
            hd = over.get("head_dim", hd)
        elif kind == "full_attention":
            hd = cfg["global_head_dim"] or hd
        if hd % 2:
            raise ValueError("layer %d: odd head size %d cannot be rotated" % (i, hd))
        if nh % nkv:
            raise ValueError("layer %d: %d heads are not a multiple of %d kv heads" % (i, nh, nkv))
        geometry.append((nh, nkv, hd))
    cfg["geometry"] = geometry

    # K/V sharing: each of the last n layers reads the last earlier own-K/V layer of its type.
    n_shared = cfg["num_kv_shared_layers"]
    first_shared = L - n_shared
    if not 0 <= n_shared < L:
        raise ValueError("num_kv_shared_layers %d must lie in [0, %d)" % (n_shared, L))
    kv_source = []
    for i, kind in enumerate(layer_types):
        if i < first_shared:
            kv_source.append(i)
            continue
        own = [j for j in range(first_shared) if layer_types[j] == kind]
        if not own:
            raise ValueError("layer %d (%s) shares K/V but no earlier layer of its type has its own" % (i, kind))
        if geometry[own[-1]][1:] != geometry[i][1:]:
            raise ValueError("layer %d reads layer %d's K/V but their kv heads / head sizes differ" % (i, own[-1]))
        kv_source.append(own[-1])
    cfg["kv_source"] = kv_source
    double = cfg["use_double_wide_mlp"] and n_shared > 0
    cfg["ff_widths"] = [cfg["intermediate_size"] * (2 if double and i >= first_shared else 1) for i in range(L)]

    rope_parameters = text.get("rope_parameters") or DEFAULT_ROPE
    cfg["rope"] = {kind: parse_rope(rope_parameters.get(kind), kind) for kind in set(layer_types)}
    for i, kind in enumerate(layer_types):
        hd = geometry[i][2]
        if cfg["rope"][kind]["rope_type"] == "default" and hd != cfg["head_dim"]:
            # transformers sizes 'default' rates by head_dim, which does not fit these heads
            sys.stderr.write("warning: layer %d: 'default' rope over its %d-dim heads (transformers "
                             "would size it by head_dim = %d)\n" % (i, hd, cfg["head_dim"]))
            break
    return cfg


# --------------------------------------------------------------------------------------
# float64 helpers
# --------------------------------------------------------------------------------------

def dot(a, b):
    return math.fsum(x * y for x, y in zip(a, b))  # correctly rounded sum: slow but order-free


def matvec(rows, x):
    return [dot(row, x) for row in rows]


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def rms_norm(x, weight, eps):
    """Gemma 4 RMSNorm: plain weight; weight None is the weightless v_norm."""
    inv = (math.fsum(v * v for v in x) / len(x) + eps) ** -0.5
    if weight is None:
        return [v * inv for v in x]
    return [v * inv * w for v, w in zip(x, weight)]


def gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def softmax(scores):
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = math.fsum(exps)
    return [e / total for e in exps]


def split_heads(vec, n, d):
    return [vec[i * d:(i + 1) * d] for i in range(n)]


def scale_in_dtype(value, dtype):
    """An embedding scale as transformers applies it: a float32 tensor cast to the table's dtype."""
    x = decode_floats(encode_floats([value], "F32"), "F32")[0]
    if dtype in ("F16", "BF16"):
        x = decode_floats(encode_floats([x], dtype), dtype)[0]
    return x


def rope_frequencies(rope, dim):
    """The dim/2 angle rates f_j of one head of `dim` dims (angle at position p: p * f_j)."""
    if rope["rope_type"] == "default":
        return [rope["rope_theta"] ** (-2.0 * j / dim) for j in range(dim // 2)]
    # proportional: the exponents run over the whole head, only the first pairs turn
    turning = int(rope["partial_rotary_factor"] * dim // 2)
    return [(rope["rope_theta"] ** (-2.0 * j / dim) if j < turning else 0.0) / rope["factor"]
            for j in range(dim // 2)]


def rope_pairs(x, pos, freqs):
    """Rotate each pair (x[j], x[j + d/2]) by the angle pos * freqs[j]."""
    half = len(x) // 2
    out = list(x)
    for j, f in enumerate(freqs):
        c, s = math.cos(pos * f), math.sin(pos * f)
        out[j] = x[j] * c - x[j + half] * s
        out[j + half] = x[j + half] * c + x[j] * s
    return out


# --------------------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------------------

TEXT_PREFIXES = ("model.language_model.", "model.")


def read_tensor(store, name, shape):
    """Tensor with a shape check: rows for 2-D, flat list for 1-D."""
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
    prefix = next((p for p in TEXT_PREFIXES if store.has(p + "embed_tokens.weight")), None)
    if prefix is None:
        raise KeyError("no embed_tokens.weight under any of the prefixes %s" % (TEXT_PREFIXES,))

    def get(name, shape):
        return read_tensor(store, prefix + name, shape)

    H, V, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    P, Vp = cfg["hidden_size_per_layer_input"], cfg["vocab_size_per_layer_input"]
    model = {"cfg": cfg, "embed": get("embed_tokens.weight", [V, H]),
             "embed_scale": scale_in_dtype(H ** 0.5, store.dtype(prefix + "embed_tokens.weight")),
             "final_norm": get("norm.weight", [H]), "ple": None, "layers": []}
    if P:
        model["ple"] = {
            "table": get("embed_tokens_per_layer.weight", [Vp, L * P]),
            "scale": scale_in_dtype(P ** 0.5, store.dtype(prefix + "embed_tokens_per_layer.weight")),
            "proj": get("per_layer_model_projection.weight", [L * P, H]),
            "norm": get("per_layer_projection_norm.weight", [P]),
        }

    for i, kind in enumerate(cfg["layer_types"]):
        nh, nkv, hd = cfg["geometry"][i]
        F = cfg["ff_widths"][i]
        p = "layers.%d." % i
        a = p + "self_attn."
        layer = {
            "kind": kind, "heads": nh, "kv_heads": nkv, "head_dim": hd, "kv_source": cfg["kv_source"][i],
            "window": cfg["sliding_window"] if kind == "sliding_attention" else None,
            "freqs": rope_frequencies(cfg["rope"][kind], hd),
            "input_norm": get(p + "input_layernorm.weight", [H]),
            "post_attn_norm": get(p + "post_attention_layernorm.weight", [H]),
            "pre_ff_norm": get(p + "pre_feedforward_layernorm.weight", [H]),
            "post_ff_norm": get(p + "post_feedforward_layernorm.weight", [H]),
            "q": get(a + "q_proj.weight", [nh * hd, H]),
            "q_norm": get(a + "q_norm.weight", [hd]),
            "o": get(a + "o_proj.weight", [H, nh * hd]),
            "gate": get(p + "mlp.gate_proj.weight", [F, H]),
            "up": get(p + "mlp.up_proj.weight", [F, H]),
            "down": get(p + "mlp.down_proj.weight", [H, F]),
            "scalar": get(p + "layer_scalar", [1])[0],
        }
        if layer["kv_source"] == i:  # K/V-sharing layers carry no K/V weights
            layer.update(k=get(a + "k_proj.weight", [nkv * hd, H]), v=get(a + "v_proj.weight", [nkv * hd, H]),
                         k_norm=get(a + "k_norm.weight", [hd]))
        if P:
            layer.update(pl_gate=get(p + "per_layer_input_gate.weight", [P, H]),
                         pl_proj=get(p + "per_layer_projection.weight", [H, P]),
                         pl_norm=get(p + "post_per_layer_input_norm.weight", [H]))
        model["layers"].append(layer)

    if cfg["tie_word_embeddings"]:
        model["lm_head"] = model["embed"]  # tied: the head IS the (unscaled) embedding matrix
    else:
        if not store.has("lm_head.weight"):
            raise KeyError("config says untied embeddings but lm_head.weight is missing")
        model["lm_head"] = read_tensor(store, "lm_head.weight", [V, H])
    return model


# --------------------------------------------------------------------------------------
# forward, token by token with a K/V cache per own-K/V layer
# --------------------------------------------------------------------------------------

def embed(model, token):
    cfg = model["cfg"]
    if not 0 <= token < cfg["vocab_size"]:
        raise ValueError("token %d outside the vocabulary (size %d)" % (token, cfg["vocab_size"]))
    if model["ple"] is not None and token >= cfg["vocab_size_per_layer_input"]:
        raise ValueError("token %d outside the per-layer vocabulary (size %d)"
                         % (token, cfg["vocab_size_per_layer_input"]))
    return [v * model["embed_scale"] for v in model["embed"][token]]


def per_layer_inputs(model, token, h0):
    """The L rows of P values the layers add in their last block (None without per-layer inputs)."""
    ple = model["ple"]
    if ple is None:
        return None
    cfg = model["cfg"]
    P, H, eps = cfg["hidden_size_per_layer_input"], cfg["hidden_size"], cfg["rms_norm_eps"]
    context = [v * H ** -0.5 for v in matvec(ple["proj"], h0)]
    identity = [v * ple["scale"] for v in ple["table"][token]]
    rows = []
    for i in range(cfg["num_hidden_layers"]):
        c = rms_norm(context[i * P:(i + 1) * P], ple["norm"], eps)
        rows.append([(a + b) * 2.0 ** -0.5 for a, b in zip(c, identity[i * P:(i + 1) * P])])
    return rows


def mlp(layer, x):
    gated = [gelu_tanh(g) * u for g, u in zip(matvec(layer["gate"], x), matvec(layer["up"], x))]
    return matvec(layer["down"], gated)


def finish_layer(model, layer, h, attn_out, pli):
    """Everything after the attention: its output norm, the MLP, the per-layer input, layer_scalar."""
    eps = model["cfg"]["rms_norm_eps"]
    h = add(h, rms_norm(matvec(layer["o"], attn_out), layer["post_attn_norm"], eps))
    h = add(h, rms_norm(mlp(layer, rms_norm(h, layer["pre_ff_norm"], eps)), layer["post_ff_norm"], eps))
    if pli is not None:
        g = [gelu_tanh(a) * b for a, b in zip(matvec(layer["pl_gate"], h), pli)]
        h = add(h, rms_norm(matvec(layer["pl_proj"], g), layer["pl_norm"], eps))
    return [v * layer["scalar"] for v in h]


def output_logits(model, h):
    cfg = model["cfg"]
    logits = matvec(model["lm_head"], rms_norm(h, model["final_norm"], cfg["rms_norm_eps"]))
    cap = cfg["final_logit_softcapping"]
    if cap:
        logits = [cap * math.tanh(v / cap) for v in logits]
    return logits


def attend(q, keys, values, group):
    """One position's attention over the visible cached keys / values."""
    out = []
    for head, qh in enumerate(q):
        g = head // group
        weights = softmax([dot(qh, k[g]) for k in keys])  # scaling 1: q_norm / k_norm set the scale
        out += [math.fsum(w * v[g][d] for w, v in zip(weights, values)) for d in range(len(qh))]
    return out


def to_half(head):
    """A head's values rounded to IEEE half, as a half-precision KV cache stores them."""
    return list(struct.unpack("<%de" % len(head), struct.pack("<%de" % len(head), *head)))


def run_model(model, tokens, kv_half=False):
    """Logits (float64) of every position of `tokens`; with kv_half, keys and
    values are rounded to half when cached (everything else stays float64)."""
    eps = model["cfg"]["rms_norm_eps"]
    store = to_half if kv_half else (lambda head: head)
    caches = [{"k": [], "v": []} for _ in model["layers"]]  # used by own-K/V layers only
    logits = []
    for pos, tok in enumerate(tokens):
        h = embed(model, tok)
        pli = per_layer_inputs(model, tok, h)
        for i, layer in enumerate(model["layers"]):
            nh, nkv, hd = layer["heads"], layer["kv_heads"], layer["head_dim"]
            x = rms_norm(h, layer["input_norm"], eps)
            q = [rope_pairs(rms_norm(head, layer["q_norm"], eps), pos, layer["freqs"])
                 for head in split_heads(matvec(layer["q"], x), nh, hd)]
            if layer["kv_source"] == i:
                caches[i]["k"].append([store(rope_pairs(rms_norm(head, layer["k_norm"], eps), pos, layer["freqs"]))
                                       for head in split_heads(matvec(layer["k"], x), nkv, hd)])
                caches[i]["v"].append([store(rms_norm(head, None, eps))
                                       for head in split_heads(matvec(layer["v"], x), nkv, hd)])
            # a sharing layer runs after its source, which has already cached this position
            cache = caches[layer["kv_source"]]
            first = 0 if layer["window"] is None else max(0, pos - layer["window"] + 1)
            out = attend(q, cache["k"][first:pos + 1], cache["v"][first:pos + 1], nh // nkv)
            h = finish_layer(model, layer, h, out, pli[i] if pli is not None else None)
        logits.append(output_logits(model, h))
    return logits


# --------------------------------------------------------------------------------------
# self-test: the whole sequence at once, transformers' way, against the cached form
# --------------------------------------------------------------------------------------

def rotate_with_tables(x, cos, sin):
    """x * cos + rotate_half(x) * sin, with rotate_half(x) = [-x2, x1] and cos / sin over the
    duplicated angles [a, a]."""
    half = len(x) // 2
    rotated = [-v for v in x[half:]] + x[:half]
    return [a * c + b * s for a, b, c, s in zip(x, rotated, cos, sin)]


def matrix_model(model, tokens):
    """Every position at once per layer: additive masks over the whole sequence, K/V handed on
    by layer type from the last own-K/V layer of each type."""
    cfg = model["cfg"]
    eps, T = cfg["rms_norm_eps"], len(tokens)
    L, n_shared = cfg["num_hidden_layers"], cfg["num_kv_shared_layers"]
    own_types = cfg["layer_types"][:L - n_shared]
    hs = [embed(model, t) for t in tokens]
    plis = [per_layer_inputs(model, t, h) for t, h in zip(tokens, hs)]
    handed_on = {}
    for i, layer in enumerate(model["layers"]):
        nh, nkv, hd, window = layer["heads"], layer["kv_heads"], layer["head_dim"], layer["window"]
        angles = [[p * f for f in layer["freqs"] + layer["freqs"]] for p in range(T)]
        cos = [[math.cos(a) for a in row] for row in angles]
        sin = [[math.sin(a) for a in row] for row in angles]
        xs = [rms_norm(h, layer["input_norm"], eps) for h in hs]
        Q = [[rotate_with_tables(rms_norm(head, layer["q_norm"], eps), cos[p], sin[p])
              for head in split_heads(matvec(layer["q"], x), nh, hd)] for p, x in enumerate(xs)]
        if i < L - n_shared:
            K = [[rotate_with_tables(rms_norm(head, layer["k_norm"], eps), cos[p], sin[p])
                  for head in split_heads(matvec(layer["k"], x), nkv, hd)] for p, x in enumerate(xs)]
            V = [[rms_norm(head, None, eps) for head in split_heads(matvec(layer["v"], x), nkv, hd)] for x in xs]
            if i == len(own_types) - 1 - own_types[::-1].index(layer["kind"]):
                handed_on[layer["kind"]] = (K, V)
        else:
            K, V = handed_on[layer["kind"]]
        # key s is visible from query p when s <= p and, on sliding layers, s > p - window
        mask = [[0.0 if s <= p and (window is None or s > p - window) else -math.inf for s in range(T)]
                for p in range(T)]
        new = []
        for p in range(T):
            out = []
            for head in range(nh):
                g = head * nkv // nh
                probs = softmax([dot(Q[p][head], K[s][g]) + mask[p][s] for s in range(T)])
                out += [math.fsum(probs[s] * V[s][g][d] for s in range(T)) for d in range(hd)]
            new.append(finish_layer(model, layer, hs[p], out, plis[p][i] if plis[p] is not None else None))
        hs = new
    return [output_logits(model, h) for h in hs]


def tiny_checkpoint(config, seed, dtype="F32", prefix="model.", untied=False):
    """Random Gemma 4 text tensors for `config`: {name: (shape, values, dtype)}."""
    rng = random.Random(seed)
    cfg = parse_config(config)
    H, V, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    P, Vp = cfg["hidden_size_per_layer_input"], cfg["vocab_size_per_layer_input"]

    def rnd(shape, scale, center=0.0):
        return (shape, [center + rng.gauss(0.0, scale) for _ in range(math.prod(shape))], dtype)

    w = {prefix + "embed_tokens.weight": rnd([V, H], 1.0), prefix + "norm.weight": rnd([H], 0.2, 1.0)}
    if untied:
        w["lm_head.weight"] = rnd([V, H], 1.0)
    if P:
        w[prefix + "embed_tokens_per_layer.weight"] = rnd([Vp, L * P], 1.0)
        w[prefix + "per_layer_model_projection.weight"] = rnd([L * P, H], H ** -0.5)
        w[prefix + "per_layer_projection_norm.weight"] = rnd([P], 0.2, 1.0)
    for i in range(L):
        nh, nkv, hd = cfg["geometry"][i]
        F = cfg["ff_widths"][i]
        p = prefix + "layers.%d." % i
        a = p + "self_attn."
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            w[p + norm + ".weight"] = rnd([H], 0.2, 1.0)
        w[a + "q_proj.weight"] = rnd([nh * hd, H], H ** -0.5)
        w[a + "q_norm.weight"] = rnd([hd], 0.2, 1.0)
        w[a + "o_proj.weight"] = rnd([H, nh * hd], (nh * hd) ** -0.5)
        if cfg["kv_source"][i] == i:
            w[a + "k_proj.weight"] = rnd([nkv * hd, H], H ** -0.5)
            w[a + "v_proj.weight"] = rnd([nkv * hd, H], H ** -0.5)
            w[a + "k_norm.weight"] = rnd([hd], 0.2, 1.0)
        w[p + "mlp.gate_proj.weight"] = rnd([F, H], H ** -0.5)
        w[p + "mlp.up_proj.weight"] = rnd([F, H], H ** -0.5)
        w[p + "mlp.down_proj.weight"] = rnd([H, F], F ** -0.5)
        w[p + "layer_scalar"] = ([1], [rng.uniform(0.5, 1.5)], dtype)
        if P:
            w[p + "per_layer_input_gate.weight"] = rnd([P, H], H ** -0.5)
            w[p + "per_layer_projection.weight"] = rnd([H, P], P ** -0.5)
            w[p + "post_per_layer_input_norm.weight"] = rnd([H], 0.2, 1.0)
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


SLIDING, FULL = LAYER_KINDS

TINY_A = {  # flat gemma4_text: both layer types shared, double-wide MLPs, per-layer inputs, softcap
    "model_type": "gemma4_text", "architectures": ["Gemma4ForCausalLM"],
    "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 8,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "global_head_dim": 16,
    "rms_norm_eps": 1e-6, "sliding_window": 4,
    "layer_types": [SLIDING, SLIDING, FULL, SLIDING, FULL, SLIDING, SLIDING, FULL],
    "num_kv_shared_layers": 4, "use_double_wide_mlp": True,
    "vocab_size_per_layer_input": 64, "hidden_size_per_layer_input": 8,
    "final_logit_softcapping": 5.0, "tie_word_embeddings": True,
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5,
                           "rope_theta": 1000000.0, "factor": 2.0},
    },
}

TINY_B = {  # multimodal wrapper: nested text_config, default layer types and rope, no per-layer inputs
    "model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "tie_word_embeddings": False,
    "text_config": {
        "model_type": "gemma4_text", "vocab_size": 48, "hidden_size": 24, "intermediate_size": 40,
        "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
        "global_head_dim": 16, "sliding_window": 3, "hidden_size_per_layer_input": 0,
    },
}


def self_test():
    failures = []

    def check(name, ok, detail=""):
        print("%-66s %s %s" % (name, "ok" if ok else "FAIL", detail))
        if not ok:
            failures.append(name)

    check("decode F32 / F16 / BF16 bit patterns",
          decode_floats(struct.pack("<2f", 1.5, -0.25), "F32") == [1.5, -0.25]
          and decode_floats(bytes.fromhex("003c00c0"), "F16") == [1.0, -2.0]
          and decode_floats(bytes.fromhex("803fccbd"), "BF16") == [1.0, -0.099609375])

    # sqrt(3072) = 55.4256...: bf16 steps by 0.25 there, f16 by 1/32; sqrt(2304) = 48 is exact
    s = math.sqrt(3072.0)
    check("embedding scale rounded through float32 to the table dtype",
          scale_in_dtype(s, "BF16") == 55.5 and scale_in_dtype(s, "F16") == 55.4375
          and scale_in_dtype(s, "F32") == struct.unpack("<f", struct.pack("<f", s))[0] != s
          and all(scale_in_dtype(48.0, d) == 48.0 for d in ("F32", "F16", "BF16")))

    prop = rope_frequencies(parse_rope(DEFAULT_ROPE["full_attention"], FULL), 512)
    formula = [1.0 / 1e6 ** (2 * j / 512) if j < 64 else 0.0 for j in range(256)]  # transformers' form
    worst = max(abs(a - b) / (b or 1.0) for a, b in zip(prop, formula))
    check("proportional rates: 64 of 256 nonzero, theta^(-2j/512), rest 0",
          len(prop) == 256 and sum(f != 0.0 for f in prop) == 64 and all(f == 0.0 for f in prop[64:])
          and worst < 1e-15, "max rel %.1e" % worst)
    halved = rope_frequencies(parse_rope(dict(DEFAULT_ROPE["full_attention"], factor=2.0), FULL), 512)
    default = rope_frequencies(parse_rope(DEFAULT_ROPE["sliding_attention"], SLIDING), 256)
    check("factor divides every rate; default rates theta^(-2j/256)",
          all(h == f / 2.0 for h, f in zip(halved, prop))
          and max(abs(d - 1e4 ** (-2.0 * j / 256)) for j, d in enumerate(default)) < 1e-16)

    rng = random.Random(7)
    x, y = [rng.gauss(0, 1) for _ in range(16)], [rng.gauss(0, 1) for _ in range(16)]
    freqs = rope_frequencies(parse_rope(TINY_A["rope_parameters"]["full_attention"], FULL), 16)
    worst = max(abs(a - b) for p in (0, 3, 50) for a, b in zip(
        rope_pairs(x, p, freqs), rotate_with_tables(x, [math.cos(p * f) for f in freqs * 2],
                                                     [math.sin(p * f) for f in freqs * 2])))
    turned = rope_pairs(x, 9, freqs)
    rel = abs(dot(rope_pairs(x, 9, freqs), rope_pairs(y, 4, freqs)) - dot(rope_pairs(x, 25, freqs),
                                                                          rope_pairs(y, 20, freqs)))
    check("rope: pairs == cos/sin tables; resting pairs unchanged; relative",
          worst < 1e-15 and turned[4:8] == x[4:8] and turned[12:] == x[12:] and turned[:4] != x[:4]
          and rel < 1e-12, "%.1e / %.1e" % (worst, rel))

    dflt = parse_config({})
    check("defaults: 30 layers, full every 6th, heads 256 / 512, no sharing",
          [i for i, t in enumerate(dflt["layer_types"]) if t == FULL] == [5, 11, 17, 23, 29]
          and {g[2] for g in dflt["geometry"]} == {256, 512} and dflt["kv_source"] == list(range(30))
          and dflt["ff_widths"] == [9216] * 30 and dflt["rope"][FULL]["rope_type"] == "proportional")
    cfg_a = parse_config(TINY_A)
    check("tiny A: K/V sources, double-wide shared MLPs, forced last layer",
          cfg_a["kv_source"] == [0, 1, 2, 3, 2, 3, 3, 2] and cfg_a["ff_widths"] == [48] * 4 + [96] * 4
          and parse_config({"num_hidden_layers": 3, "layer_types": [SLIDING] * 3})["layer_types"]
          == [SLIDING, SLIDING, FULL])
    refused = 0
    for key in ("attention_k_eq_v", "enable_moe_block"):
        try:
            parse_config({key: True})
        except NotImplementedError:
            refused += 1
    check("attention_k_eq_v / enable_moe_block refused", refused == 2)

    root = tempfile.mkdtemp(prefix="gemma4-check-")
    tokens = [3, 17, 42, 0, 9, 9, 31, 5, 47, 22, 11, 7, 7, 40]
    try:
        for label, config, dtype, prefix, untied in (("A", TINY_A, "F32", "model.", False),
                                                     ("B", TINY_B, "BF16", "model.language_model.", True)):
            tensors = tiny_checkpoint(config, seed=100 + ord(label), dtype=dtype, prefix=prefix, untied=untied)
            directory = os.path.join(root, "tiny_" + label.lower())
            write_model(directory, config, tensors)
            model = load_model(directory)
            logits = run_model(model, tokens)
            spread = max(max(r) - min(r) for r in logits)
            check("model %s runs (%d x %d logits, %s)" % (label, len(logits), len(logits[0]), dtype),
                  all(math.isfinite(v) for r in logits for v in r) and spread > 1e-2, "spread %.3g" % spread)

            worst = max_abs_diff(matrix_model(model, tokens), logits)
            check("model %s: whole sequence with masks == token by token (1e-12)" % label, worst <= 1e-12,
                  "max |diff| %.2e" % worst)

            vocab = model["cfg"]["vocab_size"]
            for cut in (0, 5, 10):
                changed = tokens[:cut + 1] + [(t + 13) % vocab for t in tokens[cut + 1:]]
                other = run_model(model, changed)
                check("model %s causality at %d: earlier rows identical, later differ" % (label, cut),
                      other[:cut + 1] == logits[:cut + 1]
                      and max_abs_diff(other[cut + 1:], logits[cut + 1:]) > 1e-6)

            # positions before the window's end see every key anyway; later ones lose the oldest
            W = model["cfg"]["sliding_window"]
            for layer in model["layers"]:
                if layer["window"] is not None:
                    layer["window"] = len(tokens)
            wide = run_model(model, tokens)
            check("model %s: window %d binds from position %d on" % (label, W, W),
                  wide[:W] == logits[:W]
                  and min(max_abs_diff([a], [b]) for a, b in zip(wide[W:], logits[W:])) > 1e-9)

            if label == "A":
                check("model A: softcap bounds the logits", max(abs(v) for r in logits for v in r) < 5.0)

                sharded = os.path.join(root, "tiny_a_sharded")
                write_model(sharded, config, tensors, shards=3)
                check("sharded index checkpoint == single file", run_model(load_model(sharded), tokens) == logits)

                bad = os.path.join(root, "tiny_a_bad")
                write_model(bad, dict(config, use_double_wide_mlp=False), tensors)
                try:
                    load_model(bad)
                    check("config / weight shape mismatch is refused", False)
                except ValueError as e:
                    check("config / weight shape mismatch is refused", "mlp.gate_proj" in str(e))

                out_path = os.path.join(root, "out.json")
                main([directory, "--tokens", ",".join(map(str, tokens)), "--out", out_path])
                with open(out_path) as f:
                    doc = json.load(f)
                check("CLI JSON round-trips the logits exactly",
                      doc["model"] == "tiny_a" and doc["tokens"] == tokens and doc["logits"] == logits)
    finally:
        remove_tree(root)

    if failures:
        print("self-test FAILED (%s)" % ", ".join(failures))
        return 1
    print("self-test passed")
    return 0


# --------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="float64 reference logits for a Gemma 4 text model")
    parser.add_argument("model_dir", nargs="?", help="directory with config.json and *.safetensors")
    parser.add_argument("--tokens", help="comma-separated token ids")
    parser.add_argument("--out", help="output JSON file (default: stdout)")
    parser.add_argument("--kv-half", action="store_true",
                        help="round cached keys and values to half, as a half-precision KV cache does")
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
    logits = run_model(model, tokens, kv_half=args.kv_half)
    if not all(math.isfinite(v) for row in logits for v in row):
        raise ArithmeticError("non-finite logits")
    doc = {"model": os.path.basename(os.path.normpath(args.model_dir)), "kv_half": args.kv_half,
           "tokens": tokens, "logits": logits}
    text = json.dumps(doc)  # json writes floats with repr: the shortest string that round-trips
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
