"""What copying earns, per exercise: the copier of tests/support/copier.py graded through `autograder grade`.

    python tools/copy_table.py        # make copy-table

For each exercise NN: a blank notebook; the copier pasting from the lessons only, and from everything published,
in the tree `publish --through NN` writes (the week chapter NN opens); and, to keep the copier honest, from the
tree published without a calendar (every chapter and all course code). Prints a Markdown table of the best
variant's points. tests/test_copy_catalogue.py asserts the same in CI.
"""

import io
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import nbformat  # noqa: E402

from autograder.grading.grade import Options, grade  # noqa: E402
from copier import copier_submissions, published_sources  # noqa: E402
from coursetools.manifest import load  # noqa: E402
from coursetools.publish import publish  # noqa: E402

root = Path(tempfile.mkdtemp(prefix="copy-table-"))
subs = root / "subs"
ex = {c.number: c.exercise for c in load().chapters if c.exercise}


def write(tree, nb, label, lessons_only):
    released = nbformat.read(str(tree / "chapters" / f"{nb}.ipynb"), as_version=4)
    for k, (sub, _origins) in enumerate(copier_submissions(released, published_sources(tree, lessons_only))):
        d = subs / f"{label}-{k}" / f"{nb}.ipynb"
        d.parent.mkdir(parents=True)
        nbformat.write(sub, str(d))


for n, nb in ex.items():
    t = root / f"t{n}"
    publish(t, through=n, check_release=False)
    write(t, nb, f"L{n}", True)
    write(t, nb, f"A{n}", False)
    b = subs / f"B{n}" / f"{nb}.ipynb"
    b.parent.mkdir(parents=True)
    b.write_bytes((t / "chapters" / f"{nb}.ipynb").read_bytes())
e = root / "all"
publish(e, everything=True, check_release=False)
for n, nb in ex.items():
    write(e, nb, f"E{n}", False)
started = time.time()
res = grade(subs, Options(workdir=root / "w", notebooks=sorted(ex.values())), out=io.StringIO())
print(f"graded {len(res)} in {time.time() - started:.0f}s")
best = {}
for r in res:
    m = re.match(r"([LABE])(\d\d)", r.student)
    if r.notebook != ex[m.group(2)]:
        continue
    key = (m.group(2), m.group(1))
    best[key] = max(best.get(key, 0), r.score)
    best[(m.group(2), "max")] = r.max_score
print(
    "| chapter | blank | copying the lessons | copying everything published when it opens | everything, no calendar |"
)
tot = {"B": 0, "L": 0, "A": 0, "E": 0, "max": 0}
for n in ex:
    cells = [f"{best[(n, kind)]:g}/{best[(n, 'max')]:g}" for kind in "LAE"]
    print(f"| {n} | {best[(n, 'B')]:g} | " + " | ".join(cells) + " |")
    for k in tot:
        tot[k] += best[(n, k)]
print(
    f"| all | {tot['B']:g} | {tot['L']:g}/{tot['max']:g} | {tot['A']:g}/{tot['max']:g} | {tot['E']:g}/{tot['max']:g} |"
)
shutil.rmtree(root, ignore_errors=True)
