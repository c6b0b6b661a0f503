# Student submission (example): the file starts with code that needs a module the grader does not have, and the
# classes were never written. Expected: 0 points, with a note about the failed import.
import torch
import torch.nn as nn
from my_helpers import attention_layer  # a file on the student's laptop, not submitted

MultiHeadSelfAttention = attention_layer
