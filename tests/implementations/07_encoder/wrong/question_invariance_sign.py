"""Answers (d): takes -10x for a rescaling LayerNorm removes, forgetting that the centred vector changes sign.

expect-fail: ch07_question_invariance_check
"""
# cell: ch07_question_invariance
answer_invariance = "d"
