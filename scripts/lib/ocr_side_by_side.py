#!/usr/bin/env python3
"""Per-stage times of the OCR pipeline, Rust against Python, on the same
images with the same ONNX Runtime and threads: the manifests of an `ocr-det`
and an `ocr-rec` run of profile-cli beside the JSON of ocr_reference.py.

    .venv/bin/python scripts/lib/ocr_side_by_side.py \\
        --python reference.json... --det DET_MANIFEST... --rec REC_MANIFEST... [--markdown]

A stage's figure is its median time in one pass over all the images, in
milliseconds: for the Python side, the median over its passes of the stage's
total; for the Rust side, the median per measured pass (`inclusive_per_pass`)
of the ranges the stage is made of. Given several runs of each (rounds, taken
in turns so that both sides meet the same machine), the figure is the median
of the runs' figures. scripts/ocr-side-by-side runs them.
"""

import argparse
import json
import statistics
import sys

import yaml

# (stage, the Rust target, its ranges (paths) making up the stage)
STAGES = [
    ("det_pre", "det", ["resize", "normalize"]),
    ("det_model", "det", ["model"]),
    ("det_post", "det", ["postprocess"]),
    ("rec_pre", "rec", ["crop", "resize"]),
    ("rec_model", "rec", ["model"]),
    ("rec_post", "rec", ["decode"]),
]


def per_pass_ms(manifest, path):
    for entry in manifest.get("timings", {}).get("range_tree", []):
        if entry.get("path") == path:
            stats = entry.get("inclusive_per_pass") or {}
            return stats.get("p50_ns", 0) / 1e6
    sys.exit(f"ocr_side_by_side.py: no range `{path}` in the manifest of {manifest.get('profile_name')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True, nargs="+", help="ocr_reference.py's JSON, one per round")
    parser.add_argument("--det", required=True, nargs="+", help="manifest.yaml of each ocr-det run")
    parser.add_argument("--rec", required=True, nargs="+", help="manifest.yaml of each ocr-rec run")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    pythons = []
    for path in args.python:
        with open(path) as f:
            pythons.append(json.load(f))
    manifests = {}
    for key, paths in (("det", args.det), ("rec", args.rec)):
        manifests[key] = []
        for path in paths:
            with open(path) as f:
                manifests[key].append(yaml.safe_load(f))
    rows = []
    for stage, target, paths in STAGES:
        theirs = statistics.median(p["stage_ms"][stage]["median"] for p in pythons)
        ours = statistics.median(sum(per_pass_ms(m, p) for p in paths) for m in manifests[target])
        rows.append((stage, theirs, ours, theirs / ours if ours else float("inf")))
    python = pythons[0]
    header = ("stage", "Python (ms/pass)", "Rust (ms/pass)", "Python / Rust")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|---:|---:|---:|")
        for stage, theirs, ours, ratio in rows:
            print(f"| {stage} | {theirs:.1f} | {ours:.1f} | {ratio:.2f} |")
    else:
        print(f"{header[0]:<10} {header[1]:>17} {header[2]:>15} {header[3]:>14}")
        for stage, theirs, ours, ratio in rows:
            print(f"{stage:<10} {theirs:>17.1f} {ours:>15.1f} {ratio:>14.2f}")
    print(
        f"onnxruntime {python['onnxruntime']}, {python['threads']} thread(s), "
        f"{len(python['images'])} images; {len(pythons)} round(s) of {python['passes']} passes a side, "
        f"Rust: {manifests['det'][0]['timings']['iterations']['count']} passes a round"
    )


if __name__ == "__main__":
    main()
