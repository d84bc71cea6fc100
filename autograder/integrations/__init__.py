"""The grader where instructors already are: platforms that run it themselves (Gradescope, `gradescope`).

LMS exports in and out (Canvas, Moodle, nbgrader's course directory) are plain files: they live with the other
files in and out, in `intake` (uploads, archives, lms, nbgrader) and `reporting.export`. A platform that runs the
grader in its own machine needs more (a package of the grader, an entry point, its results format): that is this
package, above reporting.
"""
