"""Graded question: predicts the output for q = [3, 0] as if the temperature were not there, softmax([3, 0])
(0.953 * 10 + 0.047 * 20 = 10.47), forgetting that T = 3 divides the similarities back to [1, 0].

expect-fail: ch01_question_temperature_check
"""
# cell: ch01_question_temperature
answer_temperature = 10.47
