"""Efficiency (issue 32, items 1-2): device and peak found in the profile, MFU, GEMM efficiency and headroom.

Every expected number is computed by hand in the test from the trace it writes (shapes, durations, step windows).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import bs4
import pytest

from conftest import sample
from reportgen.analysis.efficiency import (PEAKS_FILE, analyze_efficiency, device_peak, find_device, parse_peaks,
                                           summary_dict)
from reportgen.layouts import discover, load_run
from reportgen.loaders.op_flops import ascend_gemm_flops, load_kernel_gemms, torch_gemm_flops, torch_op_flops
from reportgen.loaders.issuelog import IssueLog

ROOT = Path(__file__).resolve().parents[1]

# --- the synthetic trace: 3 ProfilerSteps of 10 ms, one aten::mm [M,K]x[K,N] per step whose kernel lasts 200 µs ---
M = K = N = 4096
GEMM_US = 200.0
STEP_US = 10_000.0
FLOPS = 2.0 * M * K * N  # one call: 137,438,953,472
H100_BF16 = 989.5  # peaks.toml "NVIDIA H100 SXM" (datasheet 1,979 with sparsity, halved)


def write_trace(folder: Path, device: str = "NVIDIA H100 80GB HBM3", dtype: str = "c10::BFloat16",
                nested: bool = False) -> Path:
    """A one-rank Kineto trace: host ProfilerStep#1..3 (10 ms apart), in each an aten::mm (inside an aten::linear)
    whose runtime launch (correlation id) starts a 200 µs kernel, plus a 1 ms elementwise kernel. The device step
    window is first kernel to next step's first kernel = 10 ms; step 3 is partial (no next step)."""
    ev = []
    for s in (1, 2, 3):
        t0 = s * STEP_US
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                   "ts": t0, "dur": STEP_US - 1})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": t0 + 90,
                   "dur": 80, "args": {"Input Dims": [[M, K], [N, K]], "Input type": [dtype, dtype]}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 100, "dur": 50,
                   "args": {"Input Dims": [[M, K], [K, N]], "Input type": [dtype, dtype]}})
        if nested:  # a GEMM inside the GEMM (never counted twice)
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 105,
                       "dur": 10, "args": {"Input Dims": [[M, K], [K, N]], "Input type": [dtype, dtype]}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": t0 + 110, "dur": 5, "args": {"correlation": 10 * s}})
        ev.append({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": 0, "tid": 7, "ts": t0 + 200,
                   "dur": GEMM_US, "args": {"correlation": 10 * s, "device": 0}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": t0 + 300, "dur": 5, "args": {"correlation": 10 * s + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "elementwise_kernel", "pid": 0, "tid": 7, "ts": t0 + 500,
                   "dur": 1000, "args": {"correlation": 10 * s + 1, "device": 0}})
    folder.mkdir(parents=True, exist_ok=True)
    head = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
            "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85520809984}]}
    p = folder / "rank0.pt.trace.json"
    p.write_text(json.dumps({**head, "traceEvents": ev}))
    return folder


def _run(folder: Path):
    return load_run(discover(folder)[0])


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    return _run(write_trace(tmp_path_factory.mktemp("eff") / "h100"))


# --- shapes -> FLOPs -----------------------------------------------------------------------------------------------


def test_gemm_flops_from_torch_shapes():
    assert torch_gemm_flops("aten::mm", [[3, 5], [5, 7]]) == 2 * 3 * 5 * 7
    assert torch_gemm_flops("aten::addmm", [[7], [3, 5], [5, 7], [], []]) == 2 * 3 * 5 * 7
    assert torch_gemm_flops("aten::bmm", [[4, 3, 5], [4, 5, 7]]) == 2 * 4 * 3 * 5 * 7
    assert torch_gemm_flops("aten::baddbmm", [[4, 3, 7], [4, 3, 5], [4, 5, 7]]) == 2 * 4 * 3 * 5 * 7
    assert torch_gemm_flops("aten::mm", [[3, 5], [6, 7]]) is None  # inner dimensions differ: unknown
    assert torch_gemm_flops("aten::bmm", [[4, 3, 5], [2, 5, 7]]) is None
    assert torch_gemm_flops("aten::mm", [[3, 5]]) is None
    assert torch_gemm_flops("aten::linear", [[3, 5], [7, 5]]) is None  # a wrapper: its inner GEMM is counted
    assert torch_gemm_flops("aten::mm", [["a", 5], [5, 7]]) is None


def test_conv_and_attention_flops_from_shapes_and_concrete_inputs():
    # ResNet's 3x3 conv, stride 2, pad 1: [10,256,14,14] * [512,256,3,3] -> [10,512,7,7]
    conv = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    assert torch_op_flops("aten::convolution", [[10, 256, 14, 14], [512, 256, 3, 3], [], [], [], [], [], [], []],
                          conv) == 2 * 10 * 512 * 256 * 9 * 7 * 7
    grouped = ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "32"]  # depthwise-like, 32 groups
    assert torch_op_flops("aten::convolution", [[2, 64, 8, 8], [64, 2, 3, 3]], grouped) == 2 * 2 * 64 * 2 * 9 * 8 * 8
    assert torch_op_flops("aten::convolution", [[10, 256, 14, 14], [512, 256, 3, 3]],
                          conv[:6] + ["True"] + conv[7:]) is None  # transposed: not counted
    assert torch_op_flops("aten::convolution", [[10, 256, 14, 14], [512, 256, 3, 3]], None) is None  # no scalars
    # backward: the forward's FLOPs per gradient asked for (input and weight; the bias is not a product)
    back = ["", "", "", "[0]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"]
    dims = [[10, 512, 7, 7], [10, 256, 14, 14], [512, 256, 3, 3]]
    fwd = 2 * 10 * 512 * 256 * 9 * 7 * 7
    assert torch_op_flops("aten::convolution_backward", dims, back) == 2 * fwd
    assert torch_op_flops("aten::convolution_backward", dims, back[:10] + ["[False, True, False]"]) == fwd
    # attention [B,H,S,D] = [2,16,1024,64]: forward 2*B*H*S*S*(D+Dv), half when causal; backward twice the forward
    q = [2, 16, 1024, 64]
    full = 2 * 2 * 16 * 1024 * 1024 * 128
    assert torch_op_flops("aten::_scaled_dot_product_flash_attention", [q, q, q], ["", "", "", "0.", "False", "False",
                                                                                    ""]) == full
    assert torch_op_flops("aten::_scaled_dot_product_flash_attention", [q, q, q], ["", "", "", "0.", "True", "False",
                                                                                    ""]) == full / 2
    assert torch_op_flops("aten::_scaled_dot_product_flash_attention", [q, q, q], ["", "", "", "0.", "1"]) is None
    bw = [""] * 11 + ["True"] + [""] * 3
    assert torch_op_flops("aten::_scaled_dot_product_flash_attention_backward", [q, q, q, q], bw) == full
    assert torch_op_flops("aten::_scaled_dot_product_flash_attention", [q, [2, 16, 512, 64], [2, 16, 512, 64]],
                          ["", "", "", "0.", "True", "False", ""]) is None  # causal, Sq != Sk: not guessed


def test_gemm_flops_from_ascend_shapes():
    # A [32, 9216] x W^T (W = [4096, 9216]) -> out [32, 4096]: K = 9216, transposed weight or not
    assert ascend_gemm_flops("MatMulV2", '"32,9216;4096,9216;4096"', '"32,4096"') == 2 * 32 * 4096 * 9216
    # A stored transposed ([K, M]) gives the same K
    assert ascend_gemm_flops("MatMulV3", "9216,32;9216,4096", "32,4096") == 2 * 32 * 4096 * 9216
    assert ascend_gemm_flops("BatchMatMulV2", "8,128,64;8,64,256", "8,128,256") == 2 * 8 * 128 * 64 * 256
    assert ascend_gemm_flops("Add", "8,8;8,8", "8,8") is None
    assert ascend_gemm_flops("MatMulV2", "", "32,4096") is None
    assert ascend_gemm_flops("MatMulV2", "33,7;7,5", "32,5") is None  # K does not divide: unknown


def test_kernel_details_gemms_skip_fractal_layouts(tmp_path):
    p = tmp_path / "kernel_details.csv"
    p.write_text(
        "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Input Shapes,Input Data Types,Input Formats,"
        "Output Shapes,Output Data Types,Output Formats\n"
        '5,mm,MatMulV2,AI_CORE,1.0,100.0,"""64,128;128,256""",DT_BF16;DT_BF16,FORMAT_ND;FORMAT_ND,"""64,256""",'
        'DT_BF16,FORMAT_ND\n'
        '5,mm,MatMulV2,AI_CORE,2.0,300.0,"""64,128;128,256""",DT_BF16;DT_BF16,FORMAT_ND;FORMAT_ND,"""64,256""",'
        'DT_BF16,FORMAT_ND\n'
        '5,nz,MatMulV2,AI_CORE,3.0,50.0,"""8,4,16,16;16,8,16,16""",DT_BF16;DT_BF16,FRACTAL_NZ;FRACTAL_NZ,'
        '"""16,4,16,16""",DT_BF16,FRACTAL_NZ\n'
        '5,add,Add,AI_VECTOR_CORE,4.0,10.0,"""64,256;64,256""",DT_BF16;DT_BF16,FORMAT_ND;FORMAT_ND,"""64,256""",'
        'DT_BF16,FORMAT_ND\n')
    log = IssueLog(tmp_path)
    of = load_kernel_gemms(p, log)
    assert of is not None and len(of.ops) == 1
    row = of.ops.iloc[0]
    assert int(row["step"]) == 5 and row["dtype"] == "bf16" and int(row["count"]) == 2
    assert row["flops"] == pytest.approx(2 * 2 * 64 * 128 * 256)
    assert row["device_ms"] == pytest.approx(0.4)
    assert any("fractal (NZ)" in i.problem and i.problem.startswith("1 ") for i in log.issues)


# --- the peak table ----------------------------------------------------------------------------------------------


def test_peak_table_parses_and_every_source_is_documented():
    t = parse_peaks(PEAKS_FILE.read_text(encoding="utf-8"))
    assert len(t.devices) >= 25 and 0 < t.ceiling_fraction <= 1
    doc = (ROOT / "docs" / "peaks.md").read_text(encoding="utf-8")
    for e in t.devices:
        assert e.source and f"`{e.source}`" in doc, e.name
        assert e.ambiguous or e.tflops, e.name
    with pytest.raises(ValueError):
        parse_peaks('[[device]]\nname = "x"\nmatch = ["x"]\nbf16 = -1\n')


@pytest.mark.parametrize("recorded, entry", [
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB SXM"),
    ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB PCIe"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
    ("NVIDIA H800", "NVIDIA H800 SXM"),
    ("NVIDIA H200", "NVIDIA H200 SXM"),
    ("NVIDIA B200", "NVIDIA B200 (HGX B200, per GPU)"),
    ("Tesla V100-SXM2-32GB", "NVIDIA V100 SXM2"),
    ("Tesla V100-PCIE-16GB", "NVIDIA V100 PCIe"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ("AMD Instinct MI250X", "AMD Instinct MI250X (one GCD)"),
    ("Ascend910", "Huawei Ascend 910 (910A)"),
    ("Tesla V100-DGXS-32GB", None),
    ("Acme Tensor 9000", None),
])
def test_device_names_find_their_entry(recorded, entry):
    e = find_device(recorded)
    assert (e.name if e else None) == entry


def test_ambiguous_and_unknown_devices_have_no_peak_and_say_why():
    assert device_peak("AMD Instinct MI250X / MI250", {}, None).status == "ambiguous"
    amb = device_peak("Ascend910B", {}, None)
    assert amb.status == "ambiguous" and not amb.tflops
    unk = device_peak("Acme Tensor 9000", {}, None)
    assert unk.status == "unknown" and not unk.tflops
    assert device_peak(None, {}, None).status == "not recorded"


def test_ascend_peak_from_ai_core_count_and_clock():
    # 24 AI Cores x 1,800 MHz x 4096 x 2 = 353.89 TFLOPS (HiSilicon's formula, as MindSpore applies it)
    p = device_peak("Ascend910B", {"ai_core_num": 24, "aic_frequency_mhz": 1800.0}, None)
    assert p.status == "derived" and p.tflops["bf16"] == pytest.approx(24 * 1800e6 * 8192 / 1e12)
    assert p.tflops["bf16"] == pytest.approx(353.8944)
    # --peak-tflops wins over everything
    assert device_peak("Ascend910B", {"ai_core_num": 24, "aic_frequency_mhz": 1800.0}, 300.0).tflops == {"any": 300.0}


# --- MFU and headroom on the synthetic trace ---------------------------------------------------------------------


def test_gemm_shapes_and_device_time_from_the_trace(h100):
    of = h100.ranks[0].op_flops
    assert of is not None and not of.with_flops
    rows = of.ops[of.ops["step"].notna()]
    assert sorted(int(s) for s in rows["step"]) == [1, 2]  # step 3 is partial: left out as from the step times
    assert set(rows["op"]) == {"aten::mm"} and set(rows["dtype"]) == {"bf16"}
    assert list(rows["flops"]) == [FLOPS, FLOPS]
    assert list(rows["device_ms"]) == pytest.approx([GEMM_US / 1000] * 2)


def test_mfu_and_gemm_headroom_by_hand(h100):
    e = analyze_efficiency(h100)
    assert e.flops_basis == "shapes" and e.statement is None
    assert [d.status for d in e.devices] == ["table"] and e.devices[0].entry == "NVIDIA H100 SXM"
    r = e.per_rank[0]
    assert r.step_ms == pytest.approx(STEP_US / 1000)
    assert r.dtype == "bf16" and r.peak_tflops == H100_BF16
    mfu = FLOPS / (STEP_US * 1e-6 * H100_BF16 * 1e12)  # 0.0138897
    assert r.mfu == pytest.approx(mfu) and e.mfu == pytest.approx(mfu)
    assert [s for s, _ in r.per_step] == [1, 2] and all(m == pytest.approx(mfu) for _, m in r.per_step)
    assert r.known_share == pytest.approx(GEMM_US / (GEMM_US + 1000))  # GEMM time / computing time
    g = e.gemms[0]
    assert (g.op, g.shapes, g.dtype, g.ranks) == ("aten::mm", f"[{M},{K}]x[{K},{N}]", "bf16", 1)
    assert g.calls_per_step == 1 and g.ms_per_step == pytest.approx(0.2)
    assert g.tflops == pytest.approx(FLOPS / (GEMM_US * 1e-6) / 1e12)  # 687.19
    assert g.efficiency == pytest.approx(FLOPS / (GEMM_US * 1e-6) / 1e12 / H100_BF16)
    ceiling_ms = FLOPS / (0.8 * H100_BF16 * 1e12) * 1e3  # 0.173621
    assert g.headroom_ms == pytest.approx(0.2 - ceiling_ms)  # 0.026379 ms per step
    s = summary_dict(e)
    assert s["per_rank"]["0"]["mfu"] == pytest.approx(mfu, abs=1e-6)
    assert s["gemms"][0]["headroom_ms"] == pytest.approx(0.2 - ceiling_ms, abs=1e-4)


def test_peak_override_changes_mfu_and_headroom(h100):
    e = analyze_efficiency(h100, peak_tflops=500.0)
    assert e.devices[0].status == "override"
    assert e.mfu == pytest.approx(FLOPS / (STEP_US * 1e-6 * 500e12))  # 0.0274878
    assert e.gemms[0].headroom_ms == 0  # 0.8 x 500 TFLOPS would take 0.3436 ms: slower than achieved, no headroom


def test_model_flops_gives_each_rank_its_share(h100):
    e = analyze_efficiency(h100, model_flops=5e12)
    assert e.flops_basis == "model"
    assert e.mfu == pytest.approx(5e12 / (STEP_US * 1e-6 * H100_BF16 * 1e12))  # world size 1: 0.50531


def test_nested_gemm_is_counted_once(tmp_path):
    run = _run(write_trace(tmp_path / "nested", nested=True))
    rows = run.ranks[0].op_flops.ops
    assert rows.loc[rows["step"] == 1, "flops"].sum() == FLOPS


def test_unknown_device_no_mfu_and_a_clear_statement(tmp_path):
    run = _run(write_trace(tmp_path / "acme", device="Acme Tensor 9000"))
    e = analyze_efficiency(run)
    assert e.mfu is None and e.per_rank[0].mfu is None
    assert e.devices[0].status == "unknown"
    assert "no peak for Acme Tensor 9000" in e.statement.en and "--peak-tflops" in e.statement.en
    assert e.gemms[0].tflops == pytest.approx(FLOPS / (GEMM_US * 1e-6) / 1e12)  # achieved rate still shown
    assert e.gemms[0].headroom_ms is None
    s = summary_dict(e)
    assert s["mfu"] is None and s["statement"].startswith("no peak for Acme Tensor 9000")


def test_dtype_without_a_peak_for_it_gives_no_mfu(tmp_path):
    # fp8 GEMMs on a V100: the table has no fp8 peak for it, so no MFU (not the fp16 one)
    run = _run(write_trace(tmp_path / "v100", device="Tesla V100-SXM2-32GB", dtype="c10::Float8_e4m3fn"))
    e = analyze_efficiency(run)
    assert e.per_rank[0].dtype == "fp8" and e.per_rank[0].mfu is None and e.statement is not None


def test_no_flops_anywhere_is_stated(tmp_path):
    folder = write_trace(tmp_path / "noshape")
    p = folder / "rank0.pt.trace.json"
    data = json.loads(p.read_text())
    for ev in data["traceEvents"]:
        ev.get("args", {}).pop("Input Dims", None)
    p.write_text(json.dumps(data))
    e = analyze_efficiency(_run(folder))
    assert e.flops_basis == "" and e.mfu is None
    assert e.statement.en.startswith("FLOPs missing") and "not guessed" in e.statement.en


# --- the report: CLI options, overview section, summary.json ------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from reportgen.cli import main

    base = tmp_path_factory.mktemp("effsite")
    run = write_trace(base / "run")
    code = main([str(run), "-o", str(base / "out"), "-q", "--lang", "en", "--peak-tflops", "500"])
    assert code == 0
    return base / "out"


def test_cli_peak_override_reaches_the_overview_and_summary(built):
    s = json.loads((built / "summary.json").read_text(encoding="utf-8"))["metrics"]["efficiency"]
    assert s["devices"][0]["status"] == "override" and s["devices"][0]["peak_tflops"] == {"any": 500.0}
    assert s["mfu"] == pytest.approx(FLOPS / (STEP_US * 1e-6 * 500e12), abs=1e-6)
    assert s["flops_basis"] == "shapes" and s["gemms"][0]["op"] == "aten::mm"
    soup = bs4.BeautifulSoup((built / "index.html").read_text(encoding="utf-8"), "html.parser")
    assert soup.find(id="efficiency") is not None
    assert "2.75 %" in soup.select_one("p.mfu").get_text(" ", strip=True)  # 0.0274878
    cells = [td.get_text(strip=True) for td in soup.select("table.gemm-headroom tbody tr")[0].find_all("td")]
    assert cells[0] == "aten::mm" and cells[1] == f"[{M},{K}]x[{K},{N}]" and cells[6] == "687.2"
    assert cells[-1] == "0.000"  # no headroom against 0.8 x 500 TFLOPS


def test_cli_rejects_bad_values(tmp_path, capsys):
    from reportgen.cli import main

    with pytest.raises(SystemExit) as ex:
        main([str(tmp_path), "-o", str(tmp_path / "o"), "--peak-tflops", "-3"])
    assert ex.value.code == 2 and "--peak-tflops" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ex:
        main([str(tmp_path), "-o", str(tmp_path / "o"), "--model-flops", "nan"])
    assert ex.value.code == 2


# --- real traces ------------------------------------------------------------------------------------------------


@pytest.mark.samples
def test_real_a100_trace_gemms_against_the_a100_peak():
    run = _run(sample("external/hta_a100_16rank_job_rank0_5steps"))
    e = analyze_efficiency(run)
    assert e.devices[0].entry == "NVIDIA A100 80GB SXM" and e.flops_basis == "shapes"
    r = e.per_rank[0]
    assert r.dtype == "fp32" and r.peak_tflops == 19.5
    # the largest GEMM: aten::mm [64,4096]x[4096,2798] once per step, at 5-19.5 TFLOPS (fp32, no tensor cores)
    big = [g for g in e.gemms if g.shapes == "[64,4096]x[4096,2798]"]
    assert big and big[0].calls_per_step == 1 and 5 < big[0].tflops < 19.5
    assert big[0].tflops == pytest.approx(2 * 64 * 4096 * 2798 / (big[0].ms_per_step * 1e-3) / 1e12, rel=1e-6)
    # GEMMs are under 2 % of this DLRM job's computing time: the MFU (a lower bound) is tiny and says so
    assert r.known_share < 0.02 and 0 < r.mfu < 0.01


def test_profiler_flops_counts_win_and_cover_other_operators(tmp_path):
    """with_flops: the profiler's own count is used (a convolution's too), the GEMM's count replaces its shapes."""
    folder = write_trace(tmp_path / "wf")
    p = folder / "rank0.pt.trace.json"
    data = json.loads(p.read_text())
    extra = []
    for ev in data["traceEvents"]:
        if ev.get("name") == "aten::mm":
            ev["args"]["flops"] = FLOPS
        if ev.get("name") == "ProfilerStep#1" or ev.get("name") == "ProfilerStep#2":
            t0 = ev["ts"]
            extra.append({"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": t0 + 200,
                          "dur": 90, "args": {"flops": 3e9, "Input Dims": [[8, 3, 32, 32], [16, 3, 3, 3]]}})
            extra.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                          "ts": t0 + 250, "dur": 5, "args": {"correlation": 999 + int(t0)}})
            extra.append({"ph": "X", "cat": "kernel", "name": "conv_kernel", "pid": 0, "tid": 7, "ts": t0 + 2000,
                          "dur": 100, "args": {"correlation": 999 + int(t0), "device": 0}})
    data["traceEvents"] += extra
    p.write_text(json.dumps(data))
    run = _run(folder)
    assert run.ranks[0].op_flops.with_flops
    e = analyze_efficiency(run)
    assert e.flops_basis == "profiler"
    r = e.per_rank[0]
    step_ms = STEP_US / 1000
    assert r.flops_per_step == pytest.approx(FLOPS + 3e9)
    assert r.mfu == pytest.approx((FLOPS + 3e9) / (step_ms * 1e-3 * H100_BF16 * 1e12))
    assert r.known_share == pytest.approx((GEMM_US + 100) / (GEMM_US + 1000 + 100))
    assert {g.op for g in e.gemms} == {"aten::mm", "aten::conv2d"}


@pytest.fixture(scope="module")
def mindinsight_run(tmp_path_factory):
    from reportgen.synth import generate_run

    return _run(generate_run(tmp_path_factory.mktemp("mi") / "run", layout="mindinsight", ranks=4, steps=4,
                             stages=2))


def test_mindinsight_flops_mfu_per_rank_and_stage(mindinsight_run):
    run = mindinsight_run
    e = analyze_efficiency(run)
    assert e.flops_basis == "mindinsight" and e.mfu is None  # no device recorded: no peak, said so
    assert "does not name the device" in e.statement.en
    e = analyze_efficiency(run, peak_tflops=256.0)
    by_stage: dict = {}
    for x in e.per_rank:
        d = run.ranks[x.rank]
        fl = json.loads(next(run.root.rglob(f"flops_summary_{x.rank}.json")).read_text())["FLOPs"] * 1e6
        step_ms = float(d.step_trace.steps["total"].mean())
        assert x.mfu == pytest.approx(fl / (step_ms * 1e-3 * 256e12))
        by_stage.setdefault(run.info.stage_of_rank[x.rank], []).append((fl, step_ms))
    assert len(e.stages) == 2
    for s in e.stages:
        rows = by_stage[s["stage"]]
        assert s["mfu"] == pytest.approx(sum(f for f, _ in rows) / sum(t * 1e-3 * 256e12 for _, t in rows))
    assert not e.notes  # --peak-tflops: no data type is assumed


def test_assumed_data_type_is_said(tmp_path):
    run = _run(write_trace(tmp_path / "nodt", dtype="weird"))
    e = analyze_efficiency(run, model_flops=5e12)
    assert e.per_rank[0].dtype == "bf16" and e.mfu == pytest.approx(5e12 / (STEP_US * 1e-6 * H100_BF16 * 1e12))
    assert any("not recorded" in n.en and "bf16" in n.en for n in e.notes)
    e = analyze_efficiency(_run(write_trace(tmp_path / "dt")), model_flops=5e12)
    assert e.per_rank[0].dtype == "bf16" and not e.notes  # the GEMMs' type is recorded: nothing assumed


@pytest.mark.samples
def test_real_mi300x_trace_convolutions_counted():
    run = _run(sample("external/tracelens_mi300x_resnet_rank0_of8"))
    e = analyze_efficiency(run)
    r = e.per_rank[0]
    assert e.devices[0].entry == "AMD Instinct MI300X" and r.dtype == "bf16" and r.peak_tflops == 1307.4
    ops = set(run.ranks[0].op_flops.ops["op"])
    assert {"aten::convolution", "aten::convolution_backward", "aten::mm", "aten::addmm"} <= ops
    # convolutions carry most of the computing time of a ResNet: about half of it has known FLOPs here
    assert 0.3 < r.known_share < 0.8
    assert r.mfu == pytest.approx(r.flops_per_step / (r.step_ms * 1e-3 * 1307.4e12))
    assert 0 < r.mfu < 0.05  # batch 10 on an MI300X: a small share of the peak


@pytest.mark.samples
def test_ascend_text_and_db_exports_give_the_same_gemm_flops():
    """torch_npu kernel_details.csv and the DB's COMPUTE_TASK_INFO record the same MatMul shapes (two captures of the
    same model): the same FLOPs per step from either; the DB also names the chip (NPU_INFO: Ascend910B, no variant)."""
    text = _run(sample("ascend/msinsight_pytorch_2rank_level1_text"))
    db = _run(sample("ascend/msinsight_pytorch_2rank_level1_db"))
    for r in (0, 1):
        a, b = text.ranks[r].op_flops.ops, db.ranks[r].op_flops.ops
        assert sorted(zip(a["shapes"], a["flops"])) == sorted(zip(b["shapes"], b["flops"]))
        # [32,9216] x [4096,9216]^T -> [32,4096]: 2 x 32 x 4096 x 9216
        assert 2 * 32 * 4096 * 9216 in set(a["flops"])
    e = analyze_efficiency(db)
    assert db.ranks[0].info.device_model == "Ascend910B" and e.devices[0].status == "ambiguous"
    assert e.mfu is None and "no peak for Ascend910B" in e.statement.en
    e = analyze_efficiency(db, peak_tflops=280.0)
    r = e.per_rank[0]
    assert r.mfu == pytest.approx(r.flops_per_step / (r.step_ms * 1e-3 * 280e12))


def test_overview_lists_lowest_median_highest_of_many_ranks_and_names_ranks_without_flops():
    from types import SimpleNamespace

    from reportgen.analysis.efficiency import Efficiency, RankEfficiency
    from reportgen.site.views.efficiency import efficiency_context

    rows = [RankEfficiency(r, 0, 1e12, 100.0, "bf16", 100.0, 0.1 + r / 1000) for r in range(40)]
    rows.append(RankEfficiency(40, 0, None, None, "", None, None))
    ctx = efficiency_context(SimpleNamespace(efficiency=Efficiency(0.8, [], rows, "shapes")))
    assert ctx["capped"] and [r["rank"] for r in ctx["ranks"]] == [0, 20, 39]
    ctx = efficiency_context(SimpleNamespace(efficiency=Efficiency(0.8, [], rows[:5] + rows[40:], "shapes")))
    assert not ctx["capped"] and [r["rank"] for r in ctx["ranks"]] == [0, 1, 2, 3, 4] and ctx["missing"] == "40"


def test_odd_operator_arguments_never_crash_nor_count(tmp_path):
    folder = write_trace(tmp_path / "odd")
    p = folder / "rank0.pt.trace.json"
    data = json.loads(p.read_text())
    odd = [{"Input Dims": "abc", "Input type": 5}, {"Input Dims": [[M, K], None]}, {"flops": "x"},
           {"flops": -5, "Input Dims": [[M, K], [K, N]]}, {"Input Dims": [[1e400, K], [K, N]]},
           {"Input Dims": [[-1, K], [K, N]], "Concrete Inputs": [None]}]
    t = 100.0
    for a in odd:
        t += 1000
        data["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": STEP_US + t,
                                    "dur": 10, "args": a})
    data["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "aten::convolution", "pid": 1, "tid": 2,
                                "ts": STEP_US + 9000, "dur": 10, "args": {"Input Dims": [[1, 2, 3, 3], [4, 2, 1, 1]],
                                                                         "Concrete Inputs": ["", "", "", "[0, 1]",
                                                                                             "[0, 0]", "[1, 1]",
                                                                                             "False", "[0]", "1"]}})
    p.write_text(json.dumps(data).replace("1e+400", "1e400"))
    run = _run(folder)
    rows = run.ranks[0].op_flops.ops
    # only the well-formed GEMM of each step counts; the one with a negative profiler count falls back to its shapes
    step1 = rows[rows["step"] == 1]
    assert step1["flops"].sum() == 2 * FLOPS and all(math.isfinite(x) for x in rows["flops"])


def test_ascend_chip_facts_from_msprof_info_json(tmp_path):
    from reportgen.loaders.metadata import load_chip_info
    from reportgen.model import RankInfo

    dev = tmp_path / "rank0_ascend_pt" / "PROF_000001_x" / "device_3"
    dev.mkdir(parents=True)
    (dev / "info.json.3").write_text(json.dumps({"platform_version": "5", "DeviceInfo": [
        {"id": 3, "ai_core_num": 24, "aic_frequency": "1800", "aiv_num": 48}]}))
    info = RankInfo(rank=0, source_dir="rank0_ascend_pt")
    load_chip_info(tmp_path / "rank0_ascend_pt", info, IssueLog(tmp_path))
    assert info.device_model == "Ascend910B"
    assert info.device_compute == {"ai_core_num": 24, "aic_frequency_mhz": 1800.0, "platform_version": "5"}
    p = device_peak(info.device_model, info.device_compute, None)
    assert p.status == "derived" and p.tflops["fp16"] == pytest.approx(353.8944)
    # an unknown chip id names no chip; odd core counts are not used
    (dev / "info.json.3").write_text(json.dumps({"platform_version": "77", "DeviceInfo": [
        {"ai_core_num": "x", "aic_frequency": 1800}]}))
    info = RankInfo(rank=0, source_dir="rank0_ascend_pt")
    load_chip_info(tmp_path / "rank0_ascend_pt", info, IssueLog(tmp_path))
    assert info.device_model is None and info.device_compute == {}


@pytest.mark.samples
def test_real_msprof_info_names_the_ascend_910():
    run = _run(sample("mindinsight/msprof_raw_2rank_10iter"))
    info = run.ranks[run.rank_ids[0]].info
    assert info.device_model == "Ascend910"  # info.json platform_version 1
    assert info.device_compute["ai_core_num"] == 32 and info.device_compute["aic_frequency_mhz"] == 1000
    e = analyze_efficiency(run)
    assert e.devices[0].status == "table" and e.devices[0].tflops == {"fp16": 256.0}
