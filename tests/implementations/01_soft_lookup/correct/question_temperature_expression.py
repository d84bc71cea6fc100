"""Graded question: the prediction written as the exact expression, softmax([1, 0]) times the values, instead of
a rounded number."""
# cell: ch01_question_temperature
answer_temperature = 10 * math.e / (math.e + 1) + 20 / (math.e + 1)
