# Student submission (example): a missing colon stops the whole file from running. Expected: 0 points,
# with a note naming the line of the syntax error.
import torch
import torch.nn as nn


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None)
        scores = Q @ K.transpose(-2, -1) / K.size(-1) ** 0.5
        attention = scores.softmax(-1)
        return attention @ V, attention


class MultiHeadedAttention(nn.Module):
    pass
