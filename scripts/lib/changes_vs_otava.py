"""The change detector of `profile-cli history` against Apache Otava's, on
the same series: precision and recall on series with one planted shift
(3 %, 5 %, 10 % slower) and false alarms per 1,000 points on series
without one. Run by scripts/changes-vs-otava, which installs Otava from
PyPI into the project's virtual environment; prints a Markdown table.

Each series is 100 points around 100 with Gaussian noise of 1 % (sd),
once as it is and once with a slow outlier of +5 to +20 % in 3 % of the
points, as a busy machine gives.
A shift starts at a uniform place between points 20 and 80. A change
found within 2 points of the planted one is a hit; any other is a false
alarm. Both detectors read the same CSV files; Otava runs with its
command line's defaults (window 50, p <= 0.001, no minimum magnitude).
"""

import csv
import json
import os
import random
import subprocess
import sys
import tempfile

from otava.analysis import compute_change_points

LENGTH = 100
SERIES = 100
TOLERANCE = 2


def series(rng, shift, at, outliers):
    values = []
    for k in range(LENGTH):
        base = 100.0 * (1.0 + shift if k >= at else 1.0)
        value = rng.gauss(base, 1.0)
        if rng.random() < outliers:
            value *= 1.0 + rng.uniform(0.05, 0.20)
        values.append(round(value, 4))
    return values


def write_csv(path, columns):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["time", "commit"] + [f"s{j}" for j in range(len(columns))])
        for k in range(LENGTH):
            writer.writerow([f"2026-01-01T00:{k // 60:02}:{k % 60:02}", f"c{k}"] + [c[k] for c in columns])


def ours(profile, path):
    output = subprocess.run(
        [profile, "history", "changes", "--csv", path, "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    found = {}
    for change in json.loads(output)["changes"]:
        found.setdefault(int(change["metric"][1:]), []).append(change["row"])
    return found


def otava(columns):
    found = {}
    for j, values in enumerate(columns):
        points, _ = compute_change_points(values, window_len=50, max_pvalue=0.001, min_magnitude=0.0)
        found[j] = [p.index for p in points]
    return found


def score(found, planted):
    hits = alarms = 0
    for j, at in enumerate(planted):
        indexes = found.get(j, [])
        hit = [i for i in indexes if at is not None and abs(i - at) <= TOLERANCE]
        hits += 1 if hit else 0
        alarms += len(indexes) - (1 if hit else 0)
    return hits, alarms


def main():
    profile = sys.argv[1]
    rng = random.Random(20261206)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for noise, outliers in (("Gaussian", 0.0), ("Gaussian, 3 % outliers", 0.03)):
            for shift in (0.03, 0.05, 0.10, None):
                planted = [rng.randint(20, 80) if shift else None for _ in range(SERIES)]
                columns = [
                    series(rng, shift or 0.0, at if at is not None else LENGTH, outliers)
                    for at in planted
                ]
                path = os.path.join(tmp, f"shift-{shift}-{outliers}.csv")
                write_csv(path, columns)
                for name, found in (("profile-cli", ours(profile, path)), ("Apache Otava 0.8.0", otava(columns))):
                    hits, alarms = score(found, planted)
                    if shift:
                        found_all = hits + alarms
                        precision = hits / found_all if found_all else 1.0
                        rows.append((noise, f"+{shift * 100:.0f} %", name, f"{hits / SERIES:.2f}", f"{precision:.2f}", alarms))
                    else:
                        per_1000 = alarms / (SERIES * LENGTH) * 1000
                        rows.append((noise, "none", name, "", "", f"{alarms} ({per_1000:.1f} per 1,000 points)"))
    print("| noise | planted shift | detector | recall | precision | false alarms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


if __name__ == "__main__":
    main()
