#!/usr/bin/env python3
"""Make the reference fixtures for txl's import tests.

What: two small Transformer-XL language models built by the ORIGINAL PyTorch code of
kimiyoung/transformer-xl (its mem_transformer.MemTransformerLM), with every parameter set
to seeded random values, plus the per-token losses that code computes for 17 fixed token ids
in two segments (the second one reading the memory the first one left).

Why: `txl import` must turn a state dict written by the reference code into a txl model that
computes the same losses. The weights here are written by the reference code itself, so a
wrong name mapping, a transposed matrix or a misread quirk shows up as a loss mismatch.

Usage (the reference is a checkout of kimiyoung/transformer-xl, its pytorch/ folder given):
    python3 scripts/reference_fixture.py --reference /tmp/reference/pytorch \
        --out tests/fixtures/reference
Needs PyTorch (Debian 12's python3-torch, 1.13, works; use /usr/bin/python3 if another
python3 comes first on PATH).

Writes, for each of plain/ and adaptive/:
    state_dict.pt   torch.save(model.state_dict()); tied tensors appear under both names
    vocab.txt       w0 .. w{n_token-3}, <eos> and <unk> (a txl word vocabulary holds both),
                    one per line, in id order
    config.json     the txl config describing the same model
    expected.json   the token ids and the reference's per-token NLLs (float32, and float64)

Models (the reference's constructor arguments):
    plain:    n_token 24, full softmax, div_val 1, one model-level r_w_bias/r_r_bias
    adaptive: n_token 40, cutoffs [10, 20], div_val 2, tie_projs [False, True, True],
              one r_w_bias/r_r_bias per layer (see untie_relative_biases)
    both:     n_layer 2, n_head 2, d_model 16, d_head 8, d_inner 32, d_embed 16, no dropout,
              post-norm, tie_weight, relative attention (attn_type 0), tgt_len 8, mem_len 8,
              ext_len 0, no clamp, same_length False.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import warnings

try:
    import torch
except ImportError:
    # Another python3 (pyenv, a venv) may come first on PATH; Debian's python3-torch lives
    # under /usr/bin/python3.
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and \
            os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise
import torch.nn as nn

SEED_WEIGHTS = {"plain": 20240611, "adaptive": 20240612}
SEED_IDS = {"plain": 7001, "adaptive": 7002}
SCALE = 0.3  # standard deviation of the random parameter values


# The reference masks with uint8 tensors, which PyTorch >= 1.2 warns about on every call.
warnings.filterwarnings("ignore", message="masked_fill_ received a mask with dtype torch.uint8")


def load_reference(folder):
    """Import the reference's mem_transformer module from `folder` (its pytorch/ directory)."""
    folder = os.path.abspath(folder)
    for path in (os.path.join(folder, "utils"), folder):
        if path not in sys.path:
            sys.path.insert(0, path)
    # proj_adaptive_softmax.py parses torch.version.cuda when imported; CPU-only builds have
    # None there. The value is never used afterwards, so a placeholder is enough.
    saved = torch.version.cuda
    if saved is None:
        torch.version.cuda = "0.0"
    try:
        import mem_transformer  # noqa: E402  (the reference code)
    finally:
        torch.version.cuda = saved
    return mem_transformer


def untie_relative_biases(model):
    """Give every layer its own u (r_w_bias) and v (r_r_bias).

    The reference's PyTorch model has only a model-level pair that it passes to every layer
    (its TensorFlow code has untie_r). This registers a pair on each layer's dec_attn (state
    dict names layers.N.dec_attn.r_w_bias / r_r_bias) and makes each layer use its own pair
    instead of the one passed in; the reference's attention code itself is unchanged.
    The model-level pair is removed, so it is no longer in the state dict.
    """
    n_head, d_head = model.n_head, model.d_head
    for layer in model.layers:
        attn = layer.dec_attn
        attn.r_w_bias = nn.Parameter(torch.zeros(n_head, d_head))
        attn.r_r_bias = nn.Parameter(torch.zeros(n_head, d_head))
        inner = layer.forward

        def forward(dec_inp, r, _shared_w, _shared_r, dec_attn_mask=None, mems=None,
                    _inner=inner, _attn=attn):
            return _inner(dec_inp, r, _attn.r_w_bias, _attn.r_r_bias,
                          dec_attn_mask=dec_attn_mask, mems=mems)

        layer.forward = forward
    del model.r_w_bias
    del model.r_r_bias
    model.r_w_bias = None  # still read (and passed on, unused) by the reference's _forward
    model.r_r_bias = None


def randomize(model, seed):
    """Set every parameter to seeded random values: nothing keeps its 0 / 1 initial value."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # each shared (tied) tensor once
            noise = torch.randn(p.shape, dtype=p.dtype) * SCALE
            if name.endswith("layer_norm.weight"):
                p.copy_(1.0 + noise)
            else:
                p.copy_(noise)


MODELS = {
    "plain": dict(
        ref=dict(n_token=24, cutoffs=[], div_val=1, tie_projs=[False]),
        untie_r=False,
        adaptive=None,
    ),
    "adaptive": dict(
        ref=dict(n_token=40, cutoffs=[10, 20], div_val=2, tie_projs=[False, True, True]),
        untie_r=True,
        adaptive={"cutoffs": [10, 20], "div_val": 2, "tie_projs": [False, True, True]},
    ),
}
COMMON = dict(n_layer=2, n_head=2, d_model=16, d_head=8, d_inner=32, dropout=0.0, dropatt=0.0,
              tie_weight=True, d_embed=16, pre_lnorm=False, tgt_len=8, ext_len=0, mem_len=8,
              same_length=False, attn_type=0, clamp_len=-1)


def build(mt, spec):
    args = dict(COMMON)
    args.update(spec["ref"])
    n_token = args.pop("n_token")
    n_layer, n_head = args.pop("n_layer"), args.pop("n_head")
    d_model, d_head, d_inner = args.pop("d_model"), args.pop("d_head"), args.pop("d_inner")
    dropout = args.pop("dropout")
    model = mt.MemTransformerLM(n_token, n_layer, n_head, d_model, d_head, d_inner, dropout,
                                **args)
    if spec["untie_r"]:
        untie_relative_biases(model)
    # The reference returns the losses grouped by cluster unless keep_order is set; with it,
    # they come back in token order (the mean is the same either way).
    model.crit.keep_order = True
    return model


def txl_config(spec):
    c = COMMON
    model = {
        "pos_encoding": "relative",
        "n_layer": c["n_layer"],
        "d_model": c["d_model"],
        "n_head": c["n_head"],
        "d_head": c["d_head"],
        "d_inner": c["d_inner"],
        "dropout": 0.0,
        "dropatt": 0.0,
        "pre_norm": False,
        "tie_weights": True,
        "init_std": 0.02,
        "clamp_len": 0,
    }
    if spec["adaptive"] is not None:
        model["adaptive"] = spec["adaptive"]
    return {
        "data": {"dir": "data", "tokenizer": "word"},
        "model": model,
        "train": {"tgt_len": c["tgt_len"], "mem_len": c["mem_len"]},
    }


def two_segments(model, ids, dtype):
    """Per-token NLLs (python floats) of segment 1 (ids[0:8] -> ids[1:9]) and then segment 2
    (ids[8:16] -> ids[9:17]) reading the memory segment 1 returned. Layout [len, bsz=1]."""
    x = torch.tensor(ids, dtype=torch.long)[:, None]
    out = []
    with torch.no_grad():
        ret = model(x[0:8], x[1:9])
        loss1, mems = ret[0], ret[1:]
        assert loss1.dtype == dtype, loss1.dtype
        assert len(mems) == COMMON["n_layer"] + 1 and mems[0].shape[0] == 8
        ret = model(x[8:16], x[9:17], *mems)
        loss2 = ret[0]
    for loss in (loss1, loss2):
        out.extend(float(v) for v in loss[:, 0].tolist())
    return out


def fmt17(v):
    return format(v, ".17g")


def dump_json(obj, indent=0):
    """json.dumps, but floats written with 17 significant digits."""
    pad = "  " * (indent + 1)
    end = "  " * indent
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError("non-finite value")
        return fmt17(obj)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [pad + json.dumps(k) + ": " + dump_json(v, indent + 1) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(obj, list):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in obj):
            return "[" + ", ".join(dump_json(v) for v in obj) + "]"
        return "[\n" + ",\n".join(pad + dump_json(v, indent + 1) for v in obj) + "\n" + end + "]"
    return json.dumps(obj)


def reference_commit(folder):
    try:
        r = subprocess.run(["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True,
                           text=True, check=True)
        return r.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", required=True, help="the reference's pytorch/ folder")
    ap.add_argument("--out", required=True, help="output folder (plain/ and adaptive/ inside)")
    ap.add_argument("--commit", default=None,
                    help="the reference's commit, when --reference is not a git checkout")
    args = ap.parse_args()

    mt = load_reference(args.reference)
    commit = args.commit or reference_commit(args.reference) or "unknown"
    torch.set_num_threads(1)

    for name, spec in MODELS.items():
        model = build(mt, spec)
        randomize(model, SEED_WEIGHTS[name])
        model.eval()
        n_token = spec["ref"]["n_token"]

        g = torch.Generator().manual_seed(SEED_IDS[name])
        ids = torch.randint(0, n_token, (17,), generator=g).tolist()

        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        sd_path = os.path.join(folder, "state_dict.pt")
        torch.save(model.state_dict(), sd_path)
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("".join("w%d\n" % i for i in range(n_token - 2)) + "<eos>\n<unk>\n")
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write(json.dumps(txl_config(spec), indent=2) + "\n")

        nll32 = two_segments(model, ids, torch.float32)
        expected = {
            "reference": "kimiyoung/transformer-xl " + commit,
            "torch": torch.__version__,
            "seed": {"weights": SEED_WEIGHTS[name], "ids": SEED_IDS[name],
                     "weights_scale": SCALE},
            "segments": [{"data": ids[0:8], "target": ids[1:9], "memory": 0},
                         {"data": ids[8:16], "target": ids[9:17], "memory": 8}],
            "ids": ids,
            "nll": nll32,
            "mean_nll": math.fsum(nll32) / len(nll32),
        }

        # Same weights in float64 (model.double() after the float32 run; the saved state dict
        # is float32). The reference rounds the masked attention scores through float32
        # (attn_score.float().masked_fill(...).type_as(...)), so "nll_float64" carries that
        # rounding; "nll_float64_exact" makes that .float() a no-op for float64 tensors.
        model.double()
        nll64 = two_segments(model, ids, torch.float64)
        expected["nll_float64"] = nll64
        expected["mean_nll_float64"] = math.fsum(nll64) / len(nll64)
        original_float = torch.Tensor.float
        torch.Tensor.float = lambda t, *a, **k: t if t.dtype == torch.float64 \
            else original_float(t, *a, **k)
        try:
            nll64x = two_segments(model, ids, torch.float64)
        finally:
            torch.Tensor.float = original_float
        expected["nll_float64_exact"] = nll64x
        expected["mean_nll_float64_exact"] = math.fsum(nll64x) / len(nll64x)
        expected["notes"] = [
            "nll: per-token NLL in token order (crit.keep_order = True), segment 1's 8 "
            "targets then segment 2's 8; computed in float32, written as float64",
            "segment 2 reads the memory segment 1 returned (mem_len 8: 8 cached positions "
            "per layer input)",
            "nll_float64: model.double(); the reference still rounds masked attention scores "
            "through float32; nll_float64_exact: with that rounding disabled",
        ]
        if spec["untie_r"]:
            expected["notes"].append(
                "per-layer r_w_bias/r_r_bias: the reference's PyTorch model has only a shared "
                "pair; each layer is made to use its own pair (layers.N.dec_attn.r_*_bias)")
        with open(os.path.join(folder, "expected.json"), "w") as f:
            f.write(dump_json(expected) + "\n")

        sd = torch.load(sd_path)
        size = os.path.getsize(sd_path)
        print("%s: %d tensors, state_dict.pt %d bytes, ids %s" % (name, len(sd), size, ids))
        print("  mean NLL float32 %.9f  float64 %.12f  float64 exact %.12f" % (
            expected["mean_nll"], expected["mean_nll_float64"],
            expected["mean_nll_float64_exact"]))
        print("  max |f32 - f64exact| %.3g, max |f64 - f64exact| %.3g" % (
            max(abs(a - b) for a, b in zip(nll32, nll64x)),
            max(abs(a - b) for a, b in zip(nll64, nll64x))))


if __name__ == "__main__":
    main()
