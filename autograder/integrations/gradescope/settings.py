"""gradescope.json: what the zip's building was told, read back in the container for every submission.

The one record both sides of the integration share (`package` writes it, `container` reads it), with the
defaults they agree on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autograder import config
from autograder.model.records import Limits

SETTINGS = "gradescope.json"
VISIBILITY = ("visible", "after_due_date", "after_published", "hidden")  # the specification's values
# Gradescope stops a run after 10 minutes by default: the notebook gets less, so results.json is always written.
NOTEBOOK_TIMEOUT_S = 420


def gradescope_limits() -> Limits:
    """A zip's limits unless told otherwise: the notebook stops before Gradescope stops the run, and the memory
    limit is the grader's (Gradescope's containers have no GPU, whatever the machine that builds the zip has)."""
    return Limits(notebook_timeout_s=NOTEBOOK_TIMEOUT_S, memory_bytes=config.SANDBOX_MEMORY_BYTES)


@dataclass(frozen=True)
class Settings:
    """gradescope.json: what `autograder gradescope` was told when it built the zip (the notebook, when students
    see each test's result, the limits), read back in the container for every submission."""

    notebook: str
    visibility: str = "visible"  # one of VISIBILITY
    limits: Limits = field(default_factory=lambda: gradescope_limits())
    grader_version: str = config.GRADER_VERSION  # of the grader that built the zip

    def to_json(self) -> dict:
        return {
            "notebook": self.notebook,
            "visibility": self.visibility,
            "grader_version": self.grader_version,
            "limits": {
                "cell_timeout_s": self.limits.cell_timeout_s,
                "notebook_timeout_s": self.limits.notebook_timeout_s,
                "memory_bytes": self.limits.memory_bytes,
                "processes": self.limits.processes,
            },
        }

    @classmethod
    def from_json(cls, data: dict) -> Settings:
        given = data.get("limits", {})
        limits = Limits(
            cell_timeout_s=float(given.get("cell_timeout_s", config.CELL_TIMEOUT_S)),
            notebook_timeout_s=float(given.get("notebook_timeout_s", NOTEBOOK_TIMEOUT_S)),
            memory_bytes=int(given.get("memory_bytes", config.SANDBOX_MEMORY_BYTES)),
            processes=int(given.get("processes", config.SANDBOX_PROCESSES)),
        )
        return cls(
            str(data["notebook"]), str(data.get("visibility", "visible")), limits, str(data.get("grader_version", ""))
        )
