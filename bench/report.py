"""Writes the benchmark's results: results.md (the peer table grouped by work with each row's
ratio to the best peer on that work, the baseline table, the targets and the peers that could
not run) and results.png (GB/s per case, grouped by work). Called by bench/measure.py."""
import os

PEER_HEAD = ("| work | input | case | median s | spread s | GB/s | vs best peer | CPU s | "
             "peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|")
BASE_HEAD = ("| input | case | median s | spread s | GB/s | vs best baseline | CPU s (process) "
             "| peak RSS MiB |\n|---|---|---|---|---|---|---|---|")


def fmt_row(r, ratio):
    return (f"| {r['case']} | {r['median_s']:.4f} | {r['min_s']:.4f}-{r['max_s']:.4f} | "
            f"{r['gb_per_s']:.2f} | {ratio} | {r['median_cpu_s']:.2f} | "
            f"{r['peak_rss_bytes'] / 2**20:.0f} |")


def markdown(rows, targets, not_run, preamble):
    lines = [preamble, "", "**Peers: the same work on the same bytes** (GB/s of the tensors' bytes "
             "for loads, of the file for downloads; ratio to the best peer on that work)", "",
             PEER_HEAD]
    for r in (r for r in rows if r["work"]):
        ratio = f"{r['ratio_to_best_peer']:.2f}x" if r["ratio_to_best_peer"] else ""
        lines.append(f"| {r['work']} | {r['group']} " + fmt_row(r, ratio))
    base = [r for r in rows if not r["work"]]
    if base:
        lines += ["", "**ballast's modes against plain-program baselines** (GB/s of the input "
                  "file)", "", BASE_HEAD]
        for r in base:
            ratio = f"{r['ratio_to_best_baseline']:.2f}x" if r["ratio_to_best_baseline"] else ""
            lines.append(f"| {r['group']} " + fmt_row(r, ratio))
    lines += ["", "| target | measured |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in targets.items()]
    lines += ["", "Peers that could not run here:", ""]
    lines += [f"- {name}: {why}" for name, why in not_run.items()]
    return "\n".join(lines) + "\n"


def chart(rows, path, title):
    """A horizontal bar per peer-table row, grouped by work; ballast's bars dark, peers' light."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peers = [r for r in rows if r["work"]]
    if not peers:
        return
    works = list(dict.fromkeys(r["work"] for r in peers))
    labels, values, colors, ticks = [], [], [], []
    for w in works:
        ticks.append((len(labels), w))
        for r in sorted((r for r in peers if r["work"] == w), key=lambda r: -r["gb_per_s"]):
            labels.append(r["case"])
            values.append(r["gb_per_s"])
            colors.append("#1f4e79" if r["kind"] == "ballast" else "#9dc3e6")
        labels.append("")
        values.append(0)
        colors.append("white")
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(labels) + 1.2), dpi=80)
    y = range(len(labels))
    ax.barh(y, values, color=colors)
    ax.set_yticks(list(y), labels, fontsize=7)
    for i, v in enumerate(values):
        if v:
            ax.text(v, i, f" {v:.2f}", va="center", fontsize=6)
    for i, w in ticks:
        ax.text(0, i - 0.9, w, fontsize=7, fontweight="bold")
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (dark: ballast, light: peers)")
    ax.set_title(title, fontsize=9)
    ax.margins(x=0.12)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write(out, rows, targets, not_run, preamble, title):
    text = markdown(rows, targets, not_run, preamble)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text)
    chart(rows, os.path.join(out, "results.png"), title)
    return text
