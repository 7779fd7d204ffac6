"""FLOPs of matrix multiplications, convolutions and attention from the input shapes a profiler records (1 FLOP = one floating-point
operation; a multiply-add is 2).

* PyTorch operators (Kineto `Input Dims` with `record_shapes=True`): `aten::mm` [M,K],[K,N]; `aten::addmm`
  [bias],[M,K],[K,N]; `aten::bmm` [B,M,K],[B,K,N]; `aten::baddbmm` [bias],[B,M,K],[B,K,N]; `aten::_scaled_mm`
  [M,K],[K,N] -> 2 * B * M * K * N. The wrappers (`aten::linear`, `aten::matmul`) call one of these, which is counted
  instead (never both).
* PyTorch convolutions and scaled-dot-product attention from `Input Dims` and `Concrete Inputs` (`torch_op_flops`).
* Ascend kernels (torch_npu `kernel_details.csv` `Input Shapes` / `Output Shapes`, types MatMul*, BatchMatMul*):
  2 * numel(output) * K, with K = numel(first input) * N / numel(output) and N the output's last dimension (the
  same whether or not the first input is transposed).

Anything else (shapes missing, ranks that do not fit, a reduced dimension that does not divide) gives None: the
operator's FLOPs are unknown, never guessed.
"""

from __future__ import annotations

import math
import re
from typing import Optional

import pandas as pd

from reportgen.loaders.files import open_file
from reportgen.model import OP_FLOPS_COLUMNS, OpFlops

# innermost PyTorch GEMM operators: name -> index of the first matrix in Input Dims
TORCH_GEMM_OPS: dict[str, int] = {"aten::mm": 0, "aten::addmm": 1, "aten::bmm": 0, "aten::baddbmm": 1,
                                  "aten::_scaled_mm": 0}
# convolutions and attention (Kineto `Input Dims` plus `Concrete Inputs`, the scalar arguments newer PyTorch
# records): argument positions of the current ATen signatures; a value that is not what the position expects gives
# None (unknown), never a guess
CONV_OPS = {"aten::convolution", "aten::convolution_backward"}
SDPA_OPS: dict[str, int] = {  # op -> index of is_causal among its arguments
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_scaled_dot_product_flash_attention_backward": 11,
    "aten::_scaled_dot_product_efficient_attention_backward": 11,
    # (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k,
    # max_q, max_k, dropout_p, is_causal, *, scale): seen on an H100 (PyTorch 2.11, tests/data/h100/single)
    "aten::_scaled_dot_product_cudnn_attention_backward": 14,
}
TORCH_FLOP_OPS = frozenset(TORCH_GEMM_OPS) | CONV_OPS | frozenset(SDPA_OPS)
ASCEND_GEMM_RE = re.compile(r"^(Batch)?Mat[Mm]ul", re.I)
# Kineto `Input type` -> the data type the peak table uses
_DTYPES = {"float": "fp32", "c10::float": "fp32", "float32": "fp32", "double": "fp64", "c10::half": "fp16",
           "half": "fp16", "c10::bfloat16": "bf16", "bfloat16": "bf16", "c10::float8_e4m3fn": "fp8",
           "c10::float8_e5m2": "fp8", "c10::float8_e4m3fnuz": "fp8", "c10::float8_e5m2fnuz": "fp8",
           "float16": "fp16", "dt_bf16": "bf16", "fp16": "fp16", "bf16": "bf16", "fp32": "fp32",
           "hifloat32": "tf32", "hf32": "tf32"}


def dtype_of(name) -> str:
    """The peak table's data type of a profiler's type name ('c10::BFloat16' -> 'bf16'); '' when unknown."""
    if not isinstance(name, str):
        return ""
    return _DTYPES.get(name.strip().lower(), "")


def _dims(d) -> Optional[list[int]]:
    if not isinstance(d, (list, tuple)) or not d:
        return None
    out = []
    for x in d:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x < 2**53 or x != int(x):
            return None
        out.append(int(x))
    return out


def torch_gemm_flops(op: str, input_dims) -> Optional[float]:
    """FLOPs of one call of a PyTorch GEMM operator from its `Input Dims`; None when they do not fit."""
    first = TORCH_GEMM_OPS.get(op)
    if first is None or not isinstance(input_dims, (list, tuple)) or len(input_dims) < first + 2:
        return None
    a, b = _dims(input_dims[first]), _dims(input_dims[first + 1])
    if a is None or b is None or len(a) != len(b) or len(a) not in (2, 3):
        return None
    if len(a) == 2:
        (m, k), (k2, n) = a, b
        batch = 1
    else:
        (batch, m, k), (b2, k2, n) = a, b
        if b2 != batch:
            return None
    if k != k2:
        return None
    return 2.0 * batch * m * k * n


def _ints(text) -> Optional[list[int]]:
    """A Concrete Inputs list ('[2, 2]') -> [2, 2]; None when it is not one."""
    if not isinstance(text, str) or not re.fullmatch(r"\[\s*-?\d+(\s*,\s*-?\d+)*\s*\]", text.strip()):
        return None
    return [int(x) for x in text.strip()[1:-1].split(",")]


def _bools(text) -> Optional[list[bool]]:
    if not isinstance(text, str) or not re.fullmatch(r"\[\s*(True|False)(\s*,\s*(True|False))*\s*\]", text.strip()):
        return None
    return [x.strip() == "True" for x in text.strip()[1:-1].split(",")]


def _conv_forward(inp: list[int], weight: list[int], out_spatial: list[int], groups: int) -> Optional[float]:
    """2 x N x K x (C / groups) x prod(kernel) x prod(output spatial)."""
    if len(inp) != len(weight) or len(inp) < 3 or len(out_spatial) != len(inp) - 2 or groups < 1:
        return None
    n, c = inp[0], inp[1]
    k, cg = weight[0], weight[1]
    if cg * groups != c or any(x <= 0 for x in out_spatial):
        return None
    return 2.0 * n * k * cg * math.prod(weight[2:]) * math.prod(out_spatial)


def torch_op_flops(op: str, input_dims, concrete=None) -> Optional[float]:
    """FLOPs of one call of a PyTorch operator from `Input Dims` (and `Concrete Inputs`): GEMMs (torch_gemm_flops);
    `aten::convolution` (stride, padding, dilation, transposed, groups concrete; transposed ones unknown) and
    `aten::convolution_backward` (the forward's FLOPs once per gradient its output_mask asks for, input and weight;
    the output size is the gradient's); scaled-dot-product attention (forward 2 x B x H x Sq x Sk x (D + Dv), half
    when causal with Sq = Sk; backward twice the forward: its four matrix products, as PyTorch's FLOP counter). None
    when anything needed is missing or does not fit."""
    if op in TORCH_GEMM_OPS:
        return torch_gemm_flops(op, input_dims)
    if not isinstance(input_dims, (list, tuple)) or not isinstance(concrete, (list, tuple)):
        return None
    if op == "aten::convolution":
        if len(input_dims) < 2 or len(concrete) < 9:
            return None
        inp, w = _dims(input_dims[0]), _dims(input_dims[1])
        stride, pad, dil = _ints(concrete[3]), _ints(concrete[4]), _ints(concrete[5])
        if inp is None or w is None or None in (stride, pad, dil) or concrete[6] != "False":
            return None
        try:
            groups = int(concrete[8])
        except (TypeError, ValueError):
            return None
        sp = len(inp) - 2
        if not (len(stride) == len(pad) == len(dil) == sp) or any(x <= 0 for x in stride + dil):
            return None
        out = [(inp[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(sp)]
        return _conv_forward(inp, w, out, groups)
    if op == "aten::convolution_backward":
        if len(input_dims) < 3 or len(concrete) < 11:
            return None
        go, inp, w = _dims(input_dims[0]), _dims(input_dims[1]), _dims(input_dims[2])
        mask = _bools(concrete[10])
        if go is None or inp is None or w is None or mask is None or len(mask) < 2 or concrete[7] != "False":
            return None
        try:
            groups = int(concrete[9])
        except (TypeError, ValueError):
            return None
        fwd = _conv_forward(inp, w, go[2:], groups)
        return None if fwd is None or go[0] != inp[0] or go[1] != w[0] else fwd * (int(mask[0]) + int(mask[1]))
    if op in SDPA_OPS:
        back = op.endswith("_backward")
        first = 1 if back else 0  # the backward's arguments start with the output's gradient
        pos = SDPA_OPS[op]
        if len(input_dims) < first + 3 or len(concrete) <= pos or concrete[pos] not in ("True", "False"):
            return None
        q, k, v = (_dims(input_dims[first + i]) for i in range(3))
        if q is None or k is None or v is None or not (len(q) == len(k) == len(v) == 4):
            return None
        b, h, sq, d = q
        sk, dv = k[2], v[3]
        if k[0] != b or v[0] != b or k[3] != d or v[2] != sk:
            return None
        fwd = 2.0 * b * h * sq * sk * (d + dv)
        if concrete[pos] == "True":
            if sq != sk:
                return None  # causal with different lengths: the masked share depends on the alignment
            fwd /= 2
        return 2 * fwd if back else fwd
    return None


def parse_shapes(text) -> Optional[list[list[int]]]:
    """torch_npu `Input Shapes` text ('"32,4096;4096,4096;4096"') -> [[32, 4096], [4096, 4096], [4096]]."""
    if not isinstance(text, str):
        return None
    s = text.strip().strip('"').strip()
    if not s:
        return None
    out = []
    for part in s.split(";"):
        part = part.strip()
        if not part:
            out.append([])
            continue
        try:
            out.append([int(x) for x in part.split(",")])
        except ValueError:
            return None
    return out


def ascend_gemm_flops(op_type: str, input_shapes, output_shapes) -> Optional[float]:
    """FLOPs of one Ascend MatMul / BatchMatMul kernel from its input and output shapes; None when unknown."""
    if not isinstance(op_type, str) or not ASCEND_GEMM_RE.match(op_type):
        return None
    ins, outs = parse_shapes(input_shapes), parse_shapes(output_shapes)
    if not ins or not outs or len(ins) < 2 or len(ins[0]) < 2 or len(outs[0]) < 2:
        return None
    a, out = ins[0], outs[0]
    n_out = math.prod(out)
    if n_out <= 0 or any(x <= 0 for x in a):
        return None
    k_num = math.prod(a) * out[-1]
    if k_num % n_out:
        return None
    k = k_num // n_out
    return 2.0 * n_out * k


def load_kernel_gemms(path, log) -> Optional[OpFlops]:
    """torch_npu `kernel_details.csv` (with `record_shapes`): the MatMul / BatchMatMul kernels' FLOPs from their
    input and output shapes, per step (`Step Id`) and shape, with their device time. None when the file records no
    shapes or no GEMM kernel. Only the lines naming a MatMul are parsed (a few % of a large file): the quoted shape
    columns never go through the whole file's CSV parse."""
    import csv

    try:
        with open_file(path, "rb") as f:
            head = f.readline(1 << 16)
            if b"Input Shapes" not in head or b"Output Shapes" not in head:
                return None  # no shapes recorded (record_shapes off, level-1 columns): nothing to read
            lines = [ln for ln in f if b"atMul" in ln or b"atmul" in ln]
    except OSError:
        return None
    header = next(csv.reader([head.decode("utf-8", errors="replace").lstrip("\ufeff")]), [])
    col = {h.strip(): i for i, h in enumerate(header)}
    if "Type" not in col or "Duration(us)" not in col:
        return None
    names = ("Type", "Input Shapes", "Output Shapes", "Input Data Types", "Input Formats", "Output Formats", "Step Id")
    idx = [col.get(n) for n in names]
    agg: dict = {}
    bad = 0
    for row in csv.reader(ln.decode("utf-8", errors="replace") for ln in lines):
        if len(row) != len(header):
            bad += 1
            continue
        if not ASCEND_GEMM_RE.match(row[col["Type"]].strip()):
            continue
        try:
            ms = float(row[col["Duration(us)"]].strip()) / 1000.0
        except ValueError:
            bad += 1
            continue
        if not ms >= 0 or ms == float("inf"):
            bad += 1
            continue
        key = tuple("" if i is None else row[i].strip() for i in idx)
        tot = agg.get(key)
        agg[key] = (ms, 1) if tot is None else (tot[0] + ms, tot[1] + 1)
    if bad:
        log.add(path, f"{bad} MatMul row(s) with a wrong number of fields or no readable duration; skipped", "info")
    return gemm_flops_of_kernels(((*k, v[0], v[1]) for k, v in agg.items()), path, log)


def gemm_flops_of_kernels(kernels, path, log) -> Optional[OpFlops]:
    """Ascend GEMM kernels (type, input shapes, output shapes, input data types, input formats, output formats, step
    id text, total duration ms, count) -> `OpFlops` per step and shape; fractal (NZ) layouts are skipped and
    counted in a note."""
    cache: dict = {}
    recs = []
    fractal = 0
    for typ, ins, outs, dts, fin, fout, st, ms, n in kernels:
        typ = typ.strip()
        if re.search(r"NZ|FRACTAL", fin.split(";")[0], re.I) or re.search(r"NZ|FRACTAL", fout.split(";")[0], re.I):
            fractal += n  # fractal (NZ) layouts: the shapes are not the matrices' M, K, N
            continue
        key = (typ, ins, outs)
        if key not in cache:
            cache[key] = ascend_gemm_flops(typ, ins, outs)
        fl = cache[key]
        if fl is None or not ms >= 0:
            continue
        recs.append((int(st) if str(st).strip().isdigit() else None, typ, str(ins).strip('"')[:120],
                     dtype_of(dts.split(";")[0]), fl * n, ms, n))
    if fractal:
        log.add(path, f"{fractal} MatMul kernel(s) in a fractal (NZ) layout: their FLOPs are not computed from the "
                "shapes (not counted in MFU)", "info")
    if not recs:
        return None
    df = pd.DataFrame(recs, columns=["step", "op", "shapes", "dtype", "flops", "device_ms", "count"])
    df["step"] = df["step"].astype("Int64")
    df["basis"] = "shapes"
    out = df.groupby(["step", "op", "shapes", "dtype", "basis"], dropna=False, sort=False).agg(
        count=("count", "sum"), flops=("flops", "sum"), device_ms=("device_ms", "sum")).reset_index()
    return OpFlops(source=log.rel(path), ops=out[list(OP_FLOPS_COLUMNS)])
