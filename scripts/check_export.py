#!/usr/bin/env python3
"""Check a `txl export` with the ORIGINAL Transformer-XL code.

Builds kimiyoung/transformer-xl's MemTransformerLM (its pytorch/mem_transformer.py) from a
txl config, loads the exported weights into it with load_state_dict(strict=True), runs the
given token ids as one segment (data = ids[:-1], target = ids[1:], no memory) and prints
{"nll": [per-token NLL], "mean_nll": ...} as JSON on stdout. Compare with what txl computes.

Usage:
    python3 scripts/check_export.py --reference /tmp/reference/pytorch \
        --weights EXPORT.pt|EXPORT.safetensors --config CONFIG.json --ids "3,1,4,1,5" \
        [--mem-len N] [--n-token V] [--dtype auto|float32|float64]

Weights: a .pt that torch.load returns as a dict name -> tensor, or a .safetensors file
(read here with struct/json/numpy; the safetensors package is not needed).
Config -> reference model: model.pos_encoding must be "relative" (attn_type 0);
d_embed = d_model; tie_weight = model.tie_weights; adaptive = model.adaptive (cutoffs,
div_val, tie_projs), else a full softmax; pre_lnorm = model.pre_norm; clamp_len 0 -> -1
(no cap). The biases u/v: per-layer names (layers.N.dec_attn.r_w_bias/r_r_bias, as txl holds
them) make every layer use its own pair; the reference's model-level r_w_bias/r_r_bias are
accepted too. The vocabulary size comes from the weights unless --n-token is given.
Needs PyTorch (Debian 12's python3-torch works; /usr/bin/python3 if another python3 is first).
"""

import argparse
import json
import os
import struct
import sys
import warnings

# Shared with the fixture script (same folder): finding PyTorch (it restarts under Debian's
# /usr/bin/python3 when another python3 lacks torch), importing the reference, per-layer u/v.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_fixture import load_reference  # noqa: E402
from reference_fixture import untie_relative_biases as use_per_layer_biases  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import numpy as np  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Weights.

SAFETENSORS_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}


def read_safetensors(path):
    """Parse a .safetensors file by hand: u64 LE header length N, N bytes of JSON, raw data."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError("%s: header length %d runs past the end of the file" % (path, n))
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info["dtype"], [int(s) for s in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
        if not 0 <= begin <= end <= len(data):
            raise ValueError("%s: %s: data_offsets %s outside the data" % (path, name, [begin, end]))
        count = int(np.prod(shape)) if shape else 1
        raw = data[begin:end]
        if dtype == "BF16":
            if len(raw) != 2 * count:
                raise ValueError("%s: %s: %d bytes for %d BF16 values" % (path, name, len(raw), count))
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        elif dtype in SAFETENSORS_DTYPES:
            npd = SAFETENSORS_DTYPES[dtype]
            if len(raw) != npd.itemsize * count:
                raise ValueError("%s: %s: %d bytes for %d %s values" % (path, name, len(raw), count, dtype))
            array = np.frombuffer(raw, dtype=npd)
        else:
            raise ValueError("%s: %s: dtype %s is not handled" % (path, name, dtype))
        tensors[name] = torch.from_numpy(array.astype(array.dtype.newbyteorder("="))
                                         .reshape(shape).copy())
    return tensors


def read_weights(path):
    if path.endswith(".safetensors"):
        return read_safetensors(path)
    obj = torch.load(path, map_location="cpu")
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ValueError("%s: expected a dict name -> tensor" % path)
    return dict(obj)


# ---------------------------------------------------------------------------------------------
# Model.

def vocab_size(weights):
    sizes = [v.shape[0] for k, v in weights.items()
             if k.startswith("word_emb.emb_layers.") and k.endswith(".weight")]
    if not sizes:
        raise ValueError("no word_emb.emb_layers.N.weight in the weights: give --n-token")
    return int(sum(sizes))


def build_model(mt, cfg, n_token, tgt_len, mem_len, per_layer_bias):
    m = cfg["model"]
    if m.get("pos_encoding", "relative") != "relative":
        raise ValueError("model.pos_encoding %r: only \"relative\" maps onto the reference"
                         % m.get("pos_encoding"))
    d_model = m["d_model"]
    adaptive = m.get("adaptive")
    if adaptive:
        cutoffs = list(adaptive["cutoffs"])
        div_val = adaptive.get("div_val", 1)
        tie_projs = list(adaptive.get("tie_projs", [False] * (len(cutoffs) + 1)))
    else:
        cutoffs, div_val, tie_projs = [], 1, [False]
    clamp_len = m.get("clamp_len", 0)
    model = mt.MemTransformerLM(
        n_token, m["n_layer"], m["n_head"], d_model, m["d_head"], m["d_inner"],
        0.0, 0.0, tie_weight=m.get("tie_weights", True), d_embed=d_model, div_val=div_val,
        tie_projs=tie_projs, pre_lnorm=m.get("pre_norm", False), tgt_len=tgt_len, ext_len=0,
        mem_len=mem_len, cutoffs=cutoffs, same_length=False, attn_type=0,
        clamp_len=clamp_len if clamp_len > 0 else -1)
    if per_layer_bias:
        use_per_layer_biases(model)
    model.crit.keep_order = True  # losses in token order (the default groups them by cluster)
    return model


def check_tied_copies(model, weights):
    """A tied tensor has two names in the state dict; both must carry the same values."""
    by_tensor = {}
    for name, t in model.state_dict(keep_vars=True).items():
        by_tensor.setdefault(id(t), []).append(name)
    for names in by_tensor.values():
        present = [n for n in names if n in weights]
        for n in present[1:]:
            a, b = weights[present[0]], weights[n]
            if a.shape != b.shape or not torch.equal(a, b):
                raise ValueError("tied tensors %s and %s differ in the weights" % (present[0], n))


def main():
    ap = argparse.ArgumentParser(description="Check a txl export with the reference code.")
    ap.add_argument("--reference", required=True, help="the reference's pytorch/ folder")
    ap.add_argument("--weights", required=True, help=".pt (dict name -> tensor) or .safetensors")
    ap.add_argument("--config", required=True, help="the txl config (JSON)")
    ap.add_argument("--ids", required=True, help="comma-separated token ids (at least 2)")
    ap.add_argument("--mem-len", type=int, default=0, help="the reference's mem_len (default 0)")
    ap.add_argument("--n-token", type=int, default=None, help="vocabulary size (default: "
                    "from the embedding weights)")
    ap.add_argument("--dtype", choices=["auto", "float32", "float64"], default="auto",
                    help="compute dtype (auto: float64 if the weights are float64, else float32)")
    args = ap.parse_args()

    ids = [int(s) for s in args.ids.replace(" ", "").split(",") if s != ""]
    if len(ids) < 2:
        raise SystemExit("--ids: need at least 2 ids")
    with open(args.config) as f:
        cfg = json.load(f)
    weights = read_weights(args.weights)
    n_token = args.n_token if args.n_token is not None else vocab_size(weights)
    if min(ids) < 0 or max(ids) >= n_token:
        raise SystemExit("--ids: ids must lie in [0, %d)" % n_token)

    per_layer = any(k.endswith("dec_attn.r_w_bias") for k in weights)
    mt = load_reference(args.reference)
    torch.set_num_threads(1)
    model = build_model(mt, cfg, n_token, len(ids) - 1, args.mem_len, per_layer)

    dtype = args.dtype
    if dtype == "auto":
        floats = [v.dtype for v in weights.values() if v.is_floating_point()]
        dtype = "float64" if floats and all(d == torch.float64 for d in floats) else "float32"
    if dtype == "float64":
        model.double()

    expected_inv_freq = model.pos_emb.inv_freq.clone()
    check_tied_copies(model, weights)
    model.load_state_dict(weights, strict=True)
    if "pos_emb.inv_freq" in weights:
        diff = (model.pos_emb.inv_freq.double() - expected_inv_freq.double()).abs().max().item()
        if diff > 1e-6:
            print("warning: pos_emb.inv_freq differs from the reference's by up to %.3g" % diff,
                  file=sys.stderr)
    model.eval()

    x = torch.tensor(ids, dtype=torch.long)[:, None]  # [len, bsz = 1]
    with torch.no_grad():
        loss = model(x[:-1], x[1:])[0]
    nll = [float(v) for v in loss[:, 0].tolist()]
    print(json.dumps({"nll": nll, "mean_nll": sum(nll) / len(nll), "dtype": dtype,
                      "n_token": n_token}))


if __name__ == "__main__":
    main()
