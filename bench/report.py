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
    """A horizontal bar per peer-table row (log scale: downloads run at a tenth of local loads),
    grouped by work; ballast's bars dark, peers' light."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peers = [r for r in rows if r["work"]]
    if not peers:
        return
    bars, headings, y = [], [], 0
    for w in dict.fromkeys(r["work"] for r in peers):
        headings.append((y, w))
        y += 1
        for r in sorted((r for r in peers if r["work"] == w), key=lambda r: -r["gb_per_s"]):
            bars.append((y, r))
            y += 1
        y += 0.5
    fig, ax = plt.subplots(figsize=(9, 0.2 * y + 1.2), dpi=80)
    ax.barh([p for p, _ in bars], [r["gb_per_s"] for _, r in bars],
            color=["#1f4e79" if r["kind"] == "ballast" else "#9dc3e6" for _, r in bars])
    ax.set_xscale("log")
    ax.set_yticks([p for p, _ in bars], [r["case"] for _, r in bars], fontsize=7)
    for p, r in bars:
        ax.text(r["gb_per_s"], p, f" {r['gb_per_s']:.2f}", va="center", fontsize=6)
    for p, w in headings:
        ax.text(0.0, p, w, fontsize=7, fontweight="bold", va="center",
                transform=ax.get_yaxis_transform())
    ax.set_ylim(y, -1)
    ax.set_xlabel("GB/s, log scale (dark: ballast, light: peers)")
    ax.set_title(title, fontsize=9)
    ax.margins(x=0.15)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write(out, rows, targets, not_run, preamble, title):
    text = markdown(rows, targets, not_run, preamble)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text)
    chart(rows, os.path.join(out, "results.png"), title)
    return text
