"""Figure functions and dashboard data logic on synthetic results: traces, boundaries, units, findings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from blockscope.demo import synthetic_results
from blockscope.profiling.results import validate
from blockscope.profiling.views import dashboard_data as dd
from blockscope.profiling.views import figures

N_VALUES = (128, 256, 257, 1000, 1024, 1025, 4096, 16384, 65536)


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return synthetic_results(n_values=N_VALUES)


def names(fig) -> set[str]:
    return {t.name for t in fig.data if t.name and not t.name.startswith("band") and t.name != figures.EDGE_LEGEND}


def pow2(fig) -> list[float]:
    return sorted(s.x0 for s in fig.layout.shapes if (s.name or "").startswith("pow2"))


def test_synthetic_table_follows_the_results_schema(df: pd.DataFrame) -> None:
    validate(df)
    assert set(df["method"]) == {"per_call_events", "back_to_back_flushed", "cuda_graph"}
    assert df.loc[df["variant"] == "torch", "num_warps"].isna().all()
    assert (df["error"] != "").any() and (df["spill_store_bytes"] > 0).any()


def test_latency_has_a_trace_per_variant_and_power_of_two_lines(df: pd.DataFrame) -> None:
    fig = figures.latency_figure(df, "per_call_events", "fp16")
    assert {"torch", "teaching", "multirow", "online", "persistent"} <= names(fig)
    assert pow2(fig) == [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "(µs)" in fig.layout.yaxis.title.text and "N (" in fig.layout.xaxis.title.text
    assert "fp16" in fig.layout.title.text and "per_call_events" in fig.layout.title.text
    assert "H200" in fig.layout.title.text
    colors = {t.name: t.line.color for t in fig.data if t.name in figures.VARIANT_COLORS}
    assert colors == {v: figures.VARIANT_COLORS[v] for v in colors}


def test_latency_shades_regimes_from_data(df: pd.DataFrame) -> None:
    part = df[(df["dtype"] == "fp16") & (df["method"] == "per_call_events")]
    spans = dd.regime_spans(dd.regimes(part))
    assert spans[0][2] == "launch-bound" and spans[-1][2] in ("bandwidth-bound", "spill-bound")
    fig = figures.latency_figure(df, "per_call_events", "fp16", spans)
    rects = [s for s in fig.layout.shapes if (s.name or "").startswith("regime")]
    assert len(rects) == len(spans)


def test_regimes_follow_thresholds() -> None:
    table = synthetic_results(
        n_values=(128, 65536),
        variants=("torch", "teaching"),
        num_warps=(4,),
        methods=("per_call_events",),
        dtypes=("fp16",),
    )
    regimes = dd.regimes(table).set_index(["variant", "n_cols"])["regime"]
    assert regimes[("torch", 128)] == "launch-bound"
    assert regimes[("torch", 65536)] == "bandwidth-bound"


def test_filtered_out_variants_are_absent(df: pd.DataFrame) -> None:
    kept = dd.apply_filters(df, dd.Filters(variants=("torch", "teaching"), num_warps=(4,)), method=False)
    fig = figures.latency_figure(kept, "cuda_graph", "fp32")
    assert names(fig) == {"torch", "teaching"}
    assert kept.loc[kept["variant"] == "teaching", "num_warps"].eq(4).all()
    assert (kept["variant"] == "torch").any()  # num_warps filter keeps torch (NA)


def test_speedup_and_bandwidth_units(df: pd.DataFrame) -> None:
    part = df[df["method"] == "cuda_graph"]
    speedups = dd.speedup_vs_torch(part)
    assert (speedups["variant"] != "torch").all() and speedups["speedup"].gt(0).all()
    fig = figures.speedup_figure(speedups, df, "cuda_graph", "fp16")
    assert "x" in fig.layout.yaxis.title.text and pow2(fig)
    assert any(s.name == "torch parity" and s.y0 == 1.0 for s in fig.layout.shapes)
    fig = figures.bandwidth_figure(df, "cuda_graph", "fp16")
    assert "(GB/s)" in fig.layout.yaxis.title.text
    assert any(s.name == "copy bandwidth" and s.y0 == 4000.0 for s in fig.layout.shapes)


def test_masked_lanes_curve_and_figure() -> None:
    curve = dd.lane_curve(["teaching", "online"], figures.lane_n_values(128, 4096))
    teaching = curve[curve["variant"] == "teaching"].set_index("n_cols")["masked_lane_fraction"]
    assert teaching[1024] == 0 and teaching[1025] == pytest.approx(1023 / 2048)
    fig = figures.masked_lanes_figure(curve)
    assert names(fig) == {"teaching", "online"}
    assert {128, 256, 512, 1024, 2048, 4096} <= set(pow2(fig))
    assert "%" in fig.layout.yaxis.title.text


def test_lane_table_runs_the_teaching_kernel() -> None:
    table, block = dd.lane_table([0, 1, 2, 3, 4])
    assert block == 8
    assert [round(v, 4) for v in table["softmax"][:5]] == [0.0117, 0.0317, 0.0861, 0.2341, 0.6364]
    assert table["valid"].tolist() == [True] * 5 + [False] * 3
    assert table["loaded"].iloc[5] == float("-inf")
    with pytest.raises(ValueError, match="not a number"):
        dd.parse_row("1, two")


def test_findings_are_computed_from_the_data(df: pd.DataFrame) -> None:
    wins, spills, flips = dd.findings(df, "per_call_events")
    assert "beats torch" in wins.text and len(wins.data)
    assert "N=16384" in spills.text and set(spills.data["variant"]) >= {"teaching"}
    assert "timing method" in flips.text


def test_heatmap_compile_curves_and_limits(df: pd.DataFrame) -> None:
    part = df[(df["variant"] == "teaching") & (df["dtype"] == "fp16") & (df["method"] == "per_call_events")]
    pivot = dd.warps_pivot(part, "median_us")
    assert list(pivot.columns) == [4, 8] and 1000 in pivot.index
    fig = figures.heatmap_figure(pivot, "t", "µs")
    assert fig.layout.xaxis.title.text.startswith("num_warps") and fig.data[0].type == "heatmap"
    fig = figures.compile_curves_figure(df, "teaching", "fp16")
    assert {"4 warps", "8 warps"} <= names(fig) and "regs" in fig.layout.yaxis.title.text
    fig = figures.limits_figure({"registers": 4, "shared_memory": 50, "warps": 16, "blocks": 32}, "registers", "t")
    assert fig.data[0].marker.color[0] != fig.data[0].marker.color[1]


def test_waves_and_tables(df: pd.DataFrame) -> None:
    count, tail = dd.waves(4096, 132, 8)
    assert count == pytest.approx(4096 / 1056) and tail == pytest.approx((4096 - 3 * 1056) / 1056)
    kernels = dd.kernel_names_table(df)
    torch_fp16 = kernels[(kernels["variant"] == "torch") & (kernels["dtype"] == "fp16")]
    assert len(torch_fp16) >= 2 and torch_fp16["kernels"].str.contains("softmax_warp_forward").any()
    best = dd.best_warps_table(df[df["method"] == "cuda_graph"])
    assert set(best["best_num_warps"]) <= {4, 8}


def test_kernel_names_coverage_says_how_many_configs_have_names(df: pd.DataFrame) -> None:
    """All or none named: no note; part named (a trace pass cut short): the count per dtype and how to finish."""
    assert df["kernel_names"].notna().any()
    named = df.assign(kernel_names="k")
    assert dd.kernel_names_coverage(named) is None
    assert dd.kernel_names_coverage(named.assign(kernel_names=None)) is None
    part = named.copy()
    part.loc[part["dtype"] == "fp32", "kernel_names"] = None
    first = part[part["dtype"] == "fp16"].iloc[0]
    part.loc[(part["dtype"] == "fp16") & (part["n_cols"] == first["n_cols"]), "kernel_names"] = None
    note = dd.kernel_names_coverage(part)
    assert note is not None and "fp32 none" in note and "python -m profiling sweep" in dd.NAME_THE_REST
    assert "fp16 " in note and " of " in note.split("fp16 ")[1][:12]
    assert dd.seconds_text(0.0031) == "3.1 ms" and dd.seconds_text(1.642) == "1.64 s"


def test_standard_figures_cover_the_export_set(df: pd.DataFrame) -> None:
    specs = figures.standard_figures(df, method="cuda_graph", dtypes=["fp16"])
    found = {s.name.split("_")[0] for s in specs}
    assert {"masked", "latency", "speedup", "bandwidth", "occupancy", "heatmap", "overview"} <= found
    for spec in specs:
        assert isinstance(spec.data, pd.DataFrame) and spec.title == spec.figure.layout.title.text
        if spec.name not in ("masked_lanes",) and not spec.name.startswith("overview_"):  # those span every dtype
            assert "fp16" in spec.title and "H200" in spec.title
    assert all("cuda_graph" in s.title for s in specs if s.name.startswith(("latency", "speedup", "heatmap")))


def test_ncu_table_is_read_when_present(tmp_path) -> None:
    path = tmp_path / "ncu.csv"
    path.write_text(
        "variant,dtype,n_cols,num_warps,sm__maximum_warps_per_active_cycle_pct,"
        "sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_"
        'elapsed,gpu__time_duration.sum,error\nteaching,fp16,1000,4,100,"87.5",61.2,"5,344",\n'
    )
    table = dd.load_ncu(path)
    assert table.loc[0, "achieved_occupancy_pct"] == 87.5 and table.loc[0, "gpu_time_ns"] == 5344
    fig = figures.ncu_figure(table)
    assert "teaching" in names(fig)
    assert dd.load_ncu(tmp_path / "absent.csv") is None


def test_row_count_filter_keeps_one_r() -> None:
    table = pd.concat(
        [synthetic_results(n_values=(1024,)), synthetic_results(n_values=(1024,)).assign(n_rows=8192)],
        ignore_index=True,
    )
    assert dd.options(table)["n_rows"] == [4096, 8192]
    kept = dd.apply_filters(table, dd.Filters(n_rows=8192), method=False)
    assert set(kept["n_rows"]) == {8192} and len(kept) == len(table) // 2


def test_driver_occupancy_table(tmp_path) -> None:
    path = tmp_path / "occ.csv"
    path.write_text(
        "variant,dtype,n_cols,num_warps,driver_blocks_per_sm,calculator_blocks_per_sm,error\n"
        "teaching,fp16,128,1,32,32,\nonline,fp32,4096,8,2,3,\nteaching,fp16,9,1,,,boom\n"
    )
    table = dd.load_driver_occupancy(path)
    assert table["agrees"].tolist()[:2] == [True, False] and table["error"].tolist()[2] == "boom"
    assert dd.load_driver_occupancy(tmp_path / "absent.csv") is None


def test_offline_vs_live_table_loads_with_differences():
    table = dd.load_offline_vs_live()
    assert table is not None and len(table) >= 40
    compared = table[table["offline_error"] == ""]
    assert (compared["regs_difference"] == compared["offline_n_regs"] - compared["live_n_regs"]).all()
    assert (compared["offline_shared_bytes"] == compared["live_shared_bytes"]).all()


def _two_gpus() -> pd.DataFrame:
    """One file, two GPUs: H200 teaching 10 µs vs torch 17 µs (1.70x); A100 teaching 100 µs vs torch 7 µs (0.07x)."""
    small = {
        "n_values": (1024,),
        "dtypes": ("fp16",),
        "variants": ("torch", "teaching"),
        "num_warps": (4, 8),
        "methods": ("cuda_graph", "per_call_events"),
    }
    h200 = synthetic_results(gpu_name="NVIDIA H200", run_id="h-1", **small)
    a100 = synthetic_results(gpu_name="NVIDIA A100", run_id="a-1", **small)
    h200["median_us"] = pd.array(np.where(h200["variant"] == "torch", 17.0, 10.0), dtype="Float64")
    a100["median_us"] = pd.array(np.where(a100["variant"] == "torch", 7.0, 100.0), dtype="Float64")
    a100.loc[(a100["variant"] == "teaching") & (a100["method"] == "per_call_events"), "median_us"] = 5.0
    return pd.concat([h200, a100], ignore_index=True)


def test_speedups_and_best_per_n_never_mix_gpus() -> None:
    both = _two_gpus()
    speedups = dd.speedup_vs_torch(both[both["method"] == "cuda_graph"]).set_index(dd.SETUP)["speedup"]
    assert speedups.to_dict() == pytest.approx({"NVIDIA H200": 1.70, "NVIDIA A100": 0.07})
    best = dd.best_per_n(both[both["method"] == "cuda_graph"])
    assert len(best) == 4 and set(best[dd.SETUP]) == {"NVIDIA H200", "NVIDIA A100"}
    wins = dd.finding_wins(both, "cuda_graph")
    assert "NVIDIA H200 fp16: 1 of 1 N" in wins.text and "1.70x" in wins.text and "0.34" not in wins.text
    assert set(wins.data[dd.SETUP]) == {"NVIDIA H200", "NVIDIA A100"}
    flips = dd.finding_rank_flips(both)
    assert set(flips.data[dd.SETUP]) == {"NVIDIA A100"}  # only the A100's winner changes with the method
    warps = dd.best_warps_table(both[both["method"] == "cuda_graph"])
    assert set(warps[dd.SETUP]) == {"NVIDIA H200", "NVIDIA A100"} and len(warps) == 2


def test_figures_draw_gpus_side_by_side() -> None:
    both = _two_gpus()
    part = both[both["method"] == "cuda_graph"]
    fig = figures.speedup_figure(dd.speedup_vs_torch(part), both, "cuda_graph", "fp16")
    assert {t.name: float(t.y[0]) for t in fig.data} == pytest.approx(
        {"teaching · NVIDIA H200": 1.70, "teaching · NVIDIA A100": 0.07}
    )
    fig = figures.latency_figure(both, "cuda_graph", "fp16")
    assert {"torch · NVIDIA A100", "torch · NVIDIA H200", "teaching · NVIDIA A100"} <= names(fig)
    assert "NVIDIA A100 vs NVIDIA H200" in fig.layout.title.text
    fig = figures.best_speedup_figure(dd.speedup_vs_torch(part), both, "cuda_graph")
    assert {t.name for t in fig.data if t.name and t.name.startswith("fp16")} == {
        "fp16 · NVIDIA H200",
        "fp16 · NVIDIA A100",
    }
    assert dd.regime_spans(dd.regimes(part)) == []  # one shading cannot show two GPUs
    with pytest.raises(ValueError, match="several GPUs"):
        dd.warps_pivot(part[part["variant"] == "teaching"], "median_us")
    specs = figures.standard_figures(both, method="cuda_graph")
    heatmaps = sorted(s.name for s in specs if s.name.startswith("heatmap"))
    assert heatmaps == ["heatmap_teaching_NVIDIA_A100_fp16_cuda_graph", "heatmap_teaching_NVIDIA_H200_fp16_cuda_graph"]


def test_runs_of_one_gpu_split_only_when_they_timed_the_same_configs() -> None:
    small = {"n_values": (256, 1024), "dtypes": ("fp16",), "variants": ("torch", "teaching"), "num_warps": (4,)}
    first = synthetic_results(run_id="r1", **small)
    rerun = synthetic_results(run_id="r2", **small).assign(median_us=lambda t: t["median_us"] * 3)
    both = pd.concat([first, rerun], ignore_index=True)
    assert dd.setup_columns(both) == ["run_id"]
    speedups = dd.speedup_vs_torch(both[both["method"] == "cuda_graph"])
    assert set(speedups[dd.SETUP]) == {"run r1", "run r2"} and len(speedups) == 4
    parts = pd.concat([first[first["n_cols"] == 256], rerun[rerun["n_cols"] == 1024]], ignore_index=True)
    assert dd.setup_columns(parts) == [] and dd.SETUP not in dd.best_per_n(parts).columns  # parts of one sweep


def test_foreign_variants_are_drawn_and_have_no_lane_curve(df: pd.DataFrame) -> None:
    foreign = pd.concat(
        [
            df,
            df[df["variant"] == "teaching"].assign(variant="teaching_v2"),
            df[df["variant"] == "online"].assign(variant="liger"),
        ],
        ignore_index=True,
    )
    curve = dd.lane_curve(["teaching", "teaching_v2", "liger", "torch"], [256, 1024])
    assert set(curve["variant"]) == {"teaching"}
    specs = {s.name: s for s in figures.standard_figures(foreign, method="cuda_graph", dtypes=["fp16"])}
    assert {"teaching_v2", "liger"} <= names(specs["latency_fp16_cuda_graph"].figure)
    assert "heatmap_teaching_v2_fp16_cuda_graph" in specs  # an unknown name of ours gets its heatmap
    assert "heatmap_liger_fp16_cuda_graph" not in specs  # a peer backend has no num_warps axis of ours
    assert set(specs["masked_lanes"].data["variant"]) <= {"teaching", "multirow", "online", "persistent"}


def test_hidden_by_filters_names_what_is_hidden(df: pd.DataFrame) -> None:
    assert dd.hidden_by_filters(df, dd.Filters(dtype="fp16", method="cuda_graph")) is None
    everything = dd.options(df)
    assert (
        dd.hidden_by_filters(
            df,
            dd.Filters(
                variants=tuple(everything["variants"]), n_range=(everything["n_values"][0], everything["n_values"][-1])
            ),
        )
        is None
    )
    text = dd.hidden_by_filters(
        df, dd.Filters(variants=("torch", "teaching", "online"), n_range=(256, 65536), num_warps=(4,))
    )
    assert text.startswith(
        "Filters hide 2 of 5 variants (multirow, persistent); 1 of 2 num_warps (8); 1 of 9 N outside 256–65,536: "
    )
    kept = dd.apply_filters(
        df, dd.Filters(variants=("torch", "teaching", "online"), n_range=(256, 65536), num_warps=(4,)), method=False
    )
    assert text.endswith(f"{len(df) - len(kept):,} of {len(df):,} rows.")


def test_line_charts_draw_power_of_two_edges_as_markers_and_break_at_unmeasured_n(df: pd.DataFrame) -> None:
    fp16 = df[(df["dtype"] == "fp16") & (df["method"] == "cuda_graph")]
    kept = fp16[~((fp16["variant"] == "online") & (fp16["n_cols"] == 1000))]  # online never measured N=1000
    fig = figures.latency_figure(kept, "cuda_graph", "fp16", band=False)
    lines = [t for t in fig.data if t.name == "online" and t.mode == "lines+markers"]
    edges = [t for t in fig.data if t.name == "online" and t.mode == "markers"]
    assert len(lines) == 1 and len(edges) == 1
    assert list(lines[0].x) == [128, 256, 1000, 1024, 4096, 16384, 65536] and lines[0].connectgaps is False
    assert lines[0].y[2] is None  # the gap: no line drawn across N=1000
    assert list(edges[0].x) == [257, 1025] and edges[0].marker.symbol == figures.EDGE_SYMBOL
    online = kept[(kept["variant"] == "online") & (kept["error"] == "")]
    expected = online.groupby("n_cols")["median_us"].min()
    assert list(edges[0].y) == pytest.approx([expected[257], expected[1025]])
    assert list(lines[0].y[:2]) == pytest.approx([expected[128], expected[256]])
    assert figures.EDGE_LEGEND in {t.name for t in fig.data}


def test_tradeoff_heatmap_is_relative_per_n_marks_the_best_and_labels_empty_cells(df: pd.DataFrame) -> None:
    from blockscope.profiling.views import tradeoffs

    rows = df[(df["variant"] == "teaching") & (df["dtype"] == "fp16") & (df["method"] == "cuda_graph")]
    grid = tradeoffs.warps_grid(rows, "median_us")
    fig = figures.tradeoff_heatmap_figure(grid, "t", "µs", relative=True)
    measured, empty, best = fig.data
    ran = rows[rows["error"] == ""].groupby(["n_cols", "num_warps"])["median_us"].min().unstack()
    for i, n in enumerate(measured.y):
        fastest = str(int(ran.loc[int(n)].astype(float).idxmin()))
        column = list(measured.x).index(fastest)
        assert measured.z[i][column] == 1.0 and "★" in measured.text[i][column]
        assert measured.customdata[i][column] == pytest.approx(ran.loc[int(n)].min())
    row = list(empty.y).index("65536")
    assert empty.text[row][list(empty.x).index("4")] == "skipped" and empty.z[row][list(empty.x).index("4")] == 0.0
    outlines = [shape for shape in fig.layout.shapes if (shape.name or "").startswith("best")]
    assert len(outlines) == len(ran) and best.type == "scatter"
    assert measured.text[row][list(measured.x).index("4")] == ""  # each trace writes only its own cells


def test_exported_occupancy_figures_keep_the_legend_readable() -> None:
    table = synthetic_results(n_values=(256, 1024, 4096), num_warps=(1, 2, 4, 8, 16, 32), dtypes=("fp16",))
    specs = [
        s
        for s in figures.standard_figures(table, method="cuda_graph")
        if s.name.startswith("occupancy") and not s.name.startswith("occupancy_limits")
    ]
    lines = table[table["variant"] != "torch"].drop_duplicates(["variant", "num_warps"])
    assert len(lines) > figures.MAX_SERIES and len(specs) > 1  # 24 lines: split per variant group
    drawn = set()
    for spec in specs:
        entries = figures.legend_entries(spec.figure)
        assert entries <= figures.MAX_SERIES + 1  # + the edge-marker explanation
        assert spec.figure.layout.height >= entries * figures.LEGEND_ROW_PX
        drawn |= {t.name for t in spec.figure.data if t.showlegend is not False and t.name != figures.EDGE_LEGEND}
    assert len(drawn) == len(lines)


def test_ratio_figure_has_spread_bars_and_keeps_every_ratio_in_view() -> None:
    from blockscope.profiling.views import compare

    a = synthetic_results(seed=0, dtypes=("fp16",))
    b = synthetic_results(seed=1, run_id="synthetic-1", dtypes=("fp16",))
    table = compare.ratio_table(a, b, method="cuda_graph", dtype="fp16", mode="fastest config per variant")
    fig = figures.ratio_figure(table, "A", "B", "fp16", "cuda_graph")
    teaching = next(t for t in fig.data if t.name == "teaching" and t.mode == "lines+markers")
    rows = table[table["variant"] == "teaching"].set_index("n_cols")
    for x, y, up, down in zip(teaching.x, teaching.y, teaching.error_y.array, teaching.error_y.arrayminus, strict=True):
        assert y == pytest.approx(rows.at[x, "ratio"])
        assert y + up == pytest.approx(rows.at[x, "ratio_high"]) and y - down == pytest.approx(rows.at[x, "ratio_low"])
    low, high = (10**v for v in fig.layout.yaxis.range)
    assert low <= table["ratio_low"].min() and high >= table["ratio_high"].max() and low < 1 < high


def test_ratio_figure_names_series_by_r_only_where_an_n_has_several_r() -> None:
    """One R per N (the sweep's tiny N at more rows): one series per variant; an N at two R: one per (variant, R)."""
    from blockscope.profiling.views import compare

    a = synthetic_results(seed=0, dtypes=("fp16",))
    b = synthetic_results(seed=1, run_id="synthetic-1", dtypes=("fp16",))
    table = compare.ratio_table(a, b, method="cuda_graph", dtype="fp16", mode="fastest config per variant")
    names = {t.name for t in figures.ratio_figure(table, "A", "B", "fp16", "cuda_graph").data if t.name}
    assert "teaching" in names and not any(" R=" in n for n in names), names
    r = int(table["n_rows"].iloc[0])
    twice = pd.concat([table, table[table["n_cols"] == table["n_cols"].max()].assign(n_rows=2 * r)])
    names = {t.name for t in figures.ratio_figure(twice, "A", "B", "fp16", "cuda_graph").data if t.name}
    assert {f"teaching R={r}", f"teaching R={2 * r}"} <= names, names
    assert figures.ratio_figure(table.iloc[0:0], "A", "B", "fp16", "cuda_graph").data is not None


def test_summary_counts_failures_apart_from_rows_a_backend_does_not_run(df: pd.DataFrame) -> None:
    marked = df[df["error"].fillna("") == ""].copy()
    marked.loc[marked.index[:3], "error"] = "unsupported: quack: N = 129 is not a multiple of 8"
    marked.loc[marked.index[3:5], "error"] = "unavailable: liger: not installed"
    marked.loc[marked.index[5:6], "error"] = "RuntimeError: CUDA error: an illegal memory access"
    info = dd.summary(marked)
    assert (info["errors"], info["not_run"]) == (1, 5)


def test_masked_lanes_axis_shows_curves_over_half_masked() -> None:
    """Power-of-two tiles waste at most 50% (axis 0-55); a staged slice of 2048 lanes at N=128 wastes 94%."""
    curve = dd.lane_curve(["teaching", "staged"], [128, 129, 256, 4096])
    fig = figures.masked_lanes_figure(curve)
    top = fig.layout.yaxis.range[1]
    assert top >= curve["masked_lane_fraction"].max() * 100 and top <= 100
    plain = figures.masked_lanes_figure(dd.lane_curve(["teaching"], [128, 129, 256]))
    assert tuple(plain.layout.yaxis.range) == (0, 55.0)


def test_overview_speedup_compares_blockscope_kernels_only() -> None:
    """The Overview's 'fastest Blockscope kernel vs torch' leaves the peer backends out (they have their page)."""
    rows = synthetic_results()
    timed = rows[rows["method"] == rows["method"].iloc[0]]
    peer = timed[timed["variant"] == "torch"].assign(variant="quack", median_us=lambda d: d["median_us"] / 100)
    with_peer = pd.concat([timed, peer], ignore_index=True)
    ours = dd.speedup_vs_torch(with_peer, ours_only=True)
    assert len(ours) and "quack" not in set(ours["variant"])
    assert "quack" in set(dd.speedup_vs_torch(with_peer)["variant"])  # per-variant views still show the peer
    finding = dd.finding_wins(with_peer, str(timed["method"].iloc[0]))
    assert "quack" not in finding.text and "Blockscope" in finding.text


def test_latency_draws_a_few_series_first_and_colours_never_repeat() -> None:
    rows = synthetic_results()
    method = str(rows["method"].iloc[0])
    dtype = str(rows["dtype"].iloc[0])
    part = rows[(rows["method"] == method) & (rows["dtype"] == dtype)]
    best = dd.best_per_n(part)
    shown = dd.default_series(best)
    assert "torch" in shown and len(shown) <= 4
    fig = figures.latency_figure(rows, method, dtype, shown=shown, edge_markers=False)
    lines = [t for t in fig.data if t.showlegend is not False and t.name in set(best["variant"])]
    assert {t.name for t in lines if t.visible is True} == set(shown)
    assert all(t.visible == "legendonly" for t in lines if t.name not in shown)
    assert not any(t.marker.symbol == figures.EDGE_SYMBOL for t in fig.data)
    known = list(figures.VARIANT_COLORS.values())
    assert len(known) == len(set(known)), "two backends share a colour"


def test_pow2_edges_table_has_the_neighbours_of_each_power_of_two() -> None:
    best = pd.DataFrame(
        {
            "variant": ["teaching"] * 3,
            "n_cols": [1023, 1024, 1025],
            "median_us": [10.0, 10.0, 15.0],
            "error": ["", "", ""],
            "method": ["cuda_graph"] * 3,
        }
    )
    edges = dd.pow2_edges(best)
    assert len(edges) == 1 and edges.iloc[0]["p"] == 1024 and edges.iloc[0]["p+1 / p"] == pytest.approx(1.5)


def test_masked_lanes_name_the_dtype_whose_layouts_they_draw() -> None:
    """staged's slice is bytes: 2048 fp16 lanes at N = 128 (94 % masked), 1024 fp32 lanes (88 %)."""
    half = dd.lane_curve(["staged"], [128])
    single = dd.lane_curve(["staged"], [128], dtype="fp32")
    assert float(half["masked_lane_fraction"].iloc[0]) == 0.9375
    assert float(single["masked_lane_fraction"].iloc[0]) == 0.875
    assert "(fp32 rows)" in figures.masked_lanes_figure(single, "fp32").layout.title.text
    assert "(fp16 rows)" in figures.masked_lanes_figure(half).layout.title.text
