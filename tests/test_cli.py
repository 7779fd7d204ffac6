"""Command line: usage errors, exit codes, safe output."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reportgen import __version__
from reportgen.cli import main


def _run(*args):
    return subprocess.run([sys.executable, "-m", "reportgen", *args], capture_output=True, text=True)


def test_version():
    r = _run("--version")
    assert r.returncode == 0 and __version__ in r.stdout


@pytest.mark.parametrize("args", [[], ["somewhere"], ["--bogus", "x", "-o", "y"], ["--example", "x", "-o", "y"]])
def test_bad_command_line_is_one_line_and_exit_2(args):
    r = _run(*args)
    assert r.returncode == 2
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert lines[0].startswith("usage: msreport") and lines[-1].startswith("msreport: error:")
    assert sum(l.startswith("msreport: error:") for l in lines) == 1  # one error line, then nothing else


def test_no_profiler_data_is_exit_2(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("hello")
    r = _run(str(tmp_path / "run"), "-o", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "no profiler output found" in r.stderr and "step_trace_raw" in r.stderr
    assert not (tmp_path / "out").exists()


def test_missing_run_folder_is_exit_2(tmp_path):
    assert main([str(tmp_path / "nope"), "-o", str(tmp_path / "o"), "-q"]) == 2


def test_failed_run_leaves_previous_report_intact(tmp_path, synth_8_report):
    import shutil

    out = shutil.copytree(synth_8_report, tmp_path / "report", symlinks=True)
    before = (out / "summary.json").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([str(empty), "-o", str(out), "-q"]) == 2
    assert (out / "summary.json").read_text() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report")  # no temp leftovers
                and not p.name.endswith(".msreport-cache")]  # (the rank cache beside the output is kept)


def test_rebuild_replaces_report_and_keeps_files_the_user_added(tmp_path, synth_8, synth_8_report, capsys):
    import shutil

    out = shutil.copytree(synth_8_report, tmp_path / "report", symlinks=True)
    (out / "index.html").write_text("old")  # ours: replaced
    (out / "user-notes.html").write_text("mine")  # not ours: kept (see test_output.py)
    assert main([str(synth_8), "-o", str(out)]) == 0
    assert (out / "index.html").read_text() != "old"
    assert (out / "user-notes.html").read_text() == "mine"
    # the final line names the report (this build without -q: one build fewer than a test of its own)
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("Wrote report to file://")


def test_refuses_to_overwrite_a_foreign_folder(tmp_path, synth_8):
    out = tmp_path / "mydocs"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    assert main([str(synth_8), "-o", str(out), "-q"]) == 2
    assert (out / "thesis.tex").read_text() == "precious"


def test_refuses_output_that_contains_the_run(tmp_path, synth_8):
    assert main([str(synth_8), "-o", str(synth_8.parent), "-q"]) == 2


def test_symlink_outside_the_run_is_not_followed(tmp_path, synth_8):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(synth_8, run)
    outside = tmp_path / "outside_ascend_pt"
    shutil.copytree(next(run.glob("*_ascend_pt")), outside)
    (run / "link_ascend_pt").symlink_to(outside)
    # the decision is discovery's (issue 31: before, a full build to read it back from summary.json)
    from reportgen.layouts import discover

    (layout,) = discover(run)
    assert sorted(layout.ranks) == list(range(8))  # the linked copy of a rank folder is not a ninth rank
    assert {i.file: i.problem for i in layout.issues}["link_ascend_pt"] == \
        "symbolic link leads outside the run folder; not followed"
    assert not [p for rf in layout.ranks.values() for paths in [[rf.dir], *rf.files.values()] for p in paths
                if "link_ascend_pt" in str(p)]


# --- -v, progress, Ctrl-C -------------------------------------------------------------------------------------------


def test_verbose_is_msreports_own_progress_not_library_debug(tmp_path, synth_8):
    code = ("import logging, sys\n"
            "from reportgen.cli import main\n"
            f"rc = main([{str(synth_8)!r}, '-o', {str(tmp_path / 'o')!r}, '-v'])\n"
            "logging.getLogger('somelib').debug('LIBRARY DEBUG LINE')\n"
            "logging.getLogger('somelib').info('LIBRARY INFO LINE')\n"
            "sys.exit(rc)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "LIBRARY" not in r.stderr
    for stage in ("discover", "load 8 rank(s)", "analyse", "plan pages", "write"):
        assert f"msreport: stage {stage}: " in r.stderr, stage
    assert "msreport: timings: " in r.stderr
    assert all(l.startswith("msreport: ") for l in r.stderr.splitlines() if l.strip())


def test_verbose_shows_the_traceback_of_an_internal_error(tmp_path, synth_8, monkeypatch, capsys):
    import reportgen.report

    def boom(*a, **k):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(reportgen.report, "analyze", boom)
    assert main([str(synth_8), "-o", str(tmp_path / "o"), "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err
    assert main([str(synth_8), "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error: ZeroDivisionError: a bug" in err


def test_progress_plain_lines_in_logs_and_a_bar_on_a_terminal(monkeypatch):
    import io
    import time

    from reportgen import progress

    monkeypatch.setattr(progress, "QUIET_S", 0.4)
    log_stream = io.StringIO()
    ui = progress.Progress(True, stream=log_stream, tty=False)
    with ui.stage("analyse"):
        time.sleep(1.3)  # a quiet phase: the heartbeat speaks
    ui.close()
    assert "msreport: analyse ... (" in log_stream.getvalue()
    assert "\r" not in log_stream.getvalue()
    tty = io.StringIO()
    ui = progress.Progress(True, stream=tty, tty=True)
    with ui.stage("load"):
        count = ui.counter("ranks loaded")
        for i in range(1, 65):
            count(i, 64)
    ui.close()
    assert "\r" in tty.getvalue() and "ranks loaded [" in tty.getvalue() and "64/64" in tty.getvalue()
    assert [name for name, _ in ui.timings] == ["load"]


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = open(f"/proc/{d}/stat").read().rsplit(") ", 1)[1].split()
            except OSError:
                continue
            if fields[1] == str(pid):
                out.append(int(d))
    return out


def _running(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def sigint_state(pid: int) -> str:
    """"" when process `pid` gets SIGINT, else what stops it (ignored or blocked)."""
    import signal

    bad = []
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("SigIgn", "SigBlk") and int(value, 16) >> (signal.SIGINT - 1) & 1:
                bad.append(f"{key} has SIGINT")
    return ", ".join(bad)


# `python -m reportgen` as a terminal starts it, SIGINT delivered: a test run started with SIGINT ignored (a shell's
# background job without job control, nohup) hands that on to its children, and a Python started so never raises
# KeyboardInterrupt (the Ctrl-C tests then failed, or passed without anything interrupted, by how pytest was started)
AS_FROM_A_TERMINAL = [sys.executable, "-c", "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
                      "runpy.run_module('reportgen', run_name='__main__', alter_sys=True)"]


def test_ctrl_c_while_ranks_load_stops_within_a_second(tmp_path):
    """Before: 16 s (the pool finished every queued rank first) on this 256-rank run."""
    import signal
    import time

    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=256, steps=4)
    p = subprocess.Popen([*AS_FROM_A_TERMINAL, str(run), "-o", str(tmp_path / "o"), "-j", "2"],
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(_children(p.pid)) < 2 and time.monotonic() < deadline:  # the pool's workers are loading ranks
        time.sleep(0.2)
    time.sleep(1.0)
    kids = _children(p.pid)
    assert kids and p.poll() is None
    assert not sigint_state(p.pid), sigint_state(p.pid)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=30)
    took = time.monotonic() - t0
    err = p.stderr.read()
    assert rc == 130 and "interrupted" in err and "Traceback" not in err
    assert took < 2.0, took  # within a second on an idle machine; margin for a shared one
    assert not [k for k in kids if _running(k)]
    assert not (tmp_path / "o").exists()


def _help(capsys, *args) -> str:
    with pytest.raises(SystemExit) as e:
        main([*args, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def test_help_lists_the_compare_and_trend_sub_commands(monkeypatch, capsys):
    """In this process (`python -m reportgen` itself: test_version, test_bad_command_line_is_one_line_and_exit_2)."""
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    text = _help(capsys)
    assert "msreport compare" in text and "msreport trend" in text
    for sub in ("compare", "trend"):
        assert _help(capsys, sub).startswith(f"usage: msreport {sub}")
    assert "--set" in _help(capsys, "compare")


def test_ctrl_c_while_the_libraries_import_is_one_line(tmp_path):
    """Before: a KeyboardInterrupt traceback from inside pandas' import and exit code -2."""
    import signal
    import time

    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=2, steps=2)
    for delay in (0.3, 0.6):
        p = subprocess.Popen([*AS_FROM_A_TERMINAL, str(run), "-o", str(tmp_path / "o")],
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=30)
        err = p.stderr.read()
        if rc == 0:  # a fast machine finished first: nothing to interrupt
            continue
        assert rc == 130 and "interrupted" in err and "Traceback" not in err, (delay, rc, err)


# --- messages a newcomer reads (issue 34) -----------------------------------------------------------------------


@pytest.mark.slow  # mounts a read-only tmpfs, several builds: CI's slow stage (issue 31: the default suite within 8 min)
def test_unwritable_output_names_the_given_path_and_the_reason(tmp_path, synth_8):
    """Before: `-o /proc/x` said "cannot write to /proc: No such file or directory", `-o ro` on a read-only mount
    point "cannot write to .". Now the path the user gave, and why in words."""
    r = _run(str(synth_8), "-o", "/proc/msreport-x")
    assert r.returncode == 2
    assert r.stderr.strip() == ("msreport: error: cannot write the report to /proc/msreport-x: /proc does not "
                                "accept new files (No such file or directory)")
    r = _run(str(synth_8), "-o", "/dev/null/out")
    assert r.returncode == 2 and "cannot write the report to /dev/null/out: /dev/null is a file, not a folder" in \
        r.stderr
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a read-only tmpfs")
    try:
        for out, sub in (("ro", ""), ("ro/out", "/out"), ("ro/one.html", "/one.html")):
            extra = ["--single-file"] if out.endswith(".html") else []
            r = subprocess.run([sys.executable, "-m", "reportgen", str(synth_8), "-o", out, *extra], cwd=tmp_path,
                               capture_output=True, text=True)
            assert r.returncode == 2
            assert r.stderr.strip() == (f"msreport: error: cannot write the report to ro{sub}: ro is on a "
                                        "read-only file system"), r.stderr
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_compare_checks_both_inputs_before_analysing_either(tmp_path, synth_8, monkeypatch, capsys):
    import reportgen.compare

    analysed = []
    monkeypatch.setattr(reportgen.compare, "summary_from_run", lambda p, **kw: analysed.append(p) or {})
    for base, new in ((synth_8, tmp_path / "nonexistent"), (tmp_path / "nonexistent", synth_8)):
        assert main(["compare", str(base), str(new), "-o", str(tmp_path / "cmp")]) == 2
        assert capsys.readouterr().err.strip() == f"msreport: error: {tmp_path / 'nonexistent'} does not exist"
    assert analysed == [] and not (tmp_path / "cmp").exists()


@pytest.mark.parametrize("locale,lang,want", [("en_US.UTF-8", "zh,en", "en"), ("C", "zh,en", "en"),
                                              ("zh_CN.UTF-8", "en,zh", "zh"), ("zh_CN.UTF-8", "en", "en")])
def test_messages_with_two_languages_follow_the_locale(tmp_path, locale, lang, want):
    """`--lang zh,en` writes the report in both; the command's own messages take the locale's language when it is
    one of the two (before: Chinese under an English locale)."""
    env = {**os.environ, "LANG": locale, "LC_ALL": "", "LC_MESSAGES": ""}
    r = subprocess.run([sys.executable, "-m", "reportgen", str(tmp_path), "-o", str(tmp_path / "o.html"),
                        "--single-file", "--lang", lang], capture_output=True, text=True, env=env)
    error = r.stderr.strip().splitlines()[-1]
    if "," not in lang:
        assert r.returncode == 2 and "takes one language" not in error  # one language is fine; no run here
        return
    assert r.returncode == 2
    english = error.startswith("msreport: error: --single-file takes one language")
    chinese = error.startswith("msreport: error: --single-file 只能使用一种语言")
    assert (english, chinese) == (want == "en", want == "zh"), error


def test_progress_lines_follow_the_language(tmp_path, synth_8, monkeypatch, capsys):
    """Before: the stage and counter lines stayed English under `--lang zh`. The timings keep English names."""
    import io
    import time

    from reportgen import progress
    from reportgen.i18n import lazy

    monkeypatch.setattr(progress, "QUIET_S", 0.3)
    stream = io.StringIO()
    ui = progress.Progress(True, stream=stream, tty=False, lang="zh")
    with ui.stage(lazy("load {n} rank(s)", n=8)):
        count = ui.counter(lazy("ranks loaded"))
        count(3, 64)
        time.sleep(1.2)
    ui.close()
    assert "msreport: 加载 8 张卡: 已加载的卡 3/64 (" in stream.getvalue(), stream.getvalue()
    assert ui.timings[0][0] == "load 8 rank(s)"
    # end to end: the CLI hands its language to the progress lines (the write stage is quiet long enough)
    monkeypatch.setattr(progress, "QUIET_S", 0.0)
    assert main([str(synth_8), "-o", str(tmp_path / "zh"), "--lang", "zh", "-j", "1"]) == 0
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("msreport: ")]
    assert lines and any(("写入" in l or "分析" in l or "加载" in l) for l in lines), err
    assert not any(w in l for l in lines for w in (" write ", "analyse", "load 8 rank(s)", "pages written")), err


def test_errors_in_the_report_language(tmp_path, synth_8, capsys):
    """Before: under `--lang zh` a missing run folder and an unwritable output were reported in English (the
    messages were formatted when raised). Now they are rendered when printed, in the command's language: one line,
    exit code 2, the paths as given; English unchanged."""
    (tmp_path / "afile").write_text("x")
    cases = [([str(tmp_path / "nope"), "-o", str(tmp_path / "o")],
              f"运行目录 {tmp_path / 'nope'} 不存在", f"run folder {tmp_path / 'nope'} does not exist"),
             ([str(synth_8), "-o", str(tmp_path / "afile" / "out")],
              f"无法将报告写入 {tmp_path / 'afile' / 'out'}：{tmp_path / 'afile'} 是文件，不是目录",
              f"cannot write the report to {tmp_path / 'afile' / 'out'}: {tmp_path / 'afile'} is a file, not a folder")]
    for args, zh, en in cases:
        for lang, want in (("zh", zh), ("en", en)):
            assert main([*args, "-q", "--lang", lang]) == 2
            assert capsys.readouterr().err.splitlines() == [f"msreport: error: {want}"], (lang, args)
    from reportgen.errors import NoProfilingData
    from reportgen.layouts.find import discover

    with pytest.raises(NoProfilingData, match="does not exist"):  # str() of the error: English outside a --lang
        discover(tmp_path / "nope")


def test_the_command_leaves_with_its_exit_code_and_every_line_it_printed(tmp_path, synth_8):
    """The command ends without the interpreter's teardown (`entry._leave`): what it printed still reaches a pipe and
    a file whole, and the exit code is the build's (`--fail-on`: 1 when a finding is that severe, 0 otherwise)."""
    import json

    r = _run(str(synth_8), "-o", str(tmp_path / "a"), "--lang", "en")
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().splitlines()[-1].startswith("Wrote report to file://")  # the last line, whole
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    worst = {f["severity"] for f in summary["findings"]}
    want = 1 if worst & {"warning", "critical"} else 0
    with open(tmp_path / "out.txt", "w") as f:  # printed into a file: flushed before leaving too
        code = subprocess.run([sys.executable, "-m", "reportgen", str(synth_8), "-o", str(tmp_path / "b"), "--lang", "en",
                               "--fail-on", "warning"], stdout=f, stderr=subprocess.STDOUT).returncode
    assert code == want
    assert (tmp_path / "out.txt").read_text().rstrip().splitlines()[-1].startswith("Wrote report to file://")
