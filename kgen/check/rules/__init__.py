"""The independent checker's rules for the privacy models beyond k, l and t, one module per model family.

Each is written again from the model's definition on the file's own strings (numpy only): nothing of fitness/
is imported, so a bug in a model cannot hide by being shared with the code that checks its output.
"""
