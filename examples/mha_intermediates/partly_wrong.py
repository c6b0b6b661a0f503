# Student submission (example): SDPA is right, but the multi-head layer scales by the size of one head (the
# paper's rule, not the notes' one graded here) and glues the heads back without moving the head axis
# first. Expected: loses points on `scores` and `merge` only.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None):
        scores = torch.matmul(Q, K.transpose(-2, -1)) / np.sqrt(K.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention = torch.softmax(scores, dim=-1)
        return torch.matmul(attention, V), attention


class MultiHeadedAttention(nn.Module):
    def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):
        super().__init__()
        if d_feat % n_head != 0:
            raise ValueError("d_feat must be a multiple of n_head")
        self.d_feat = d_feat
        self.n_head = n_head
        self.d_head = d_feat // n_head
        self.actv = actv
        self.lin_Q = nn.Linear(d_feat, d_feat, USE_BIAS)
        self.lin_K = nn.Linear(d_feat, d_feat, USE_BIAS)
        self.lin_V = nn.Linear(d_feat, d_feat, USE_BIAS)
        self.lin_O = nn.Linear(d_feat, d_feat, USE_BIAS)
        self.dropout = nn.Dropout(p=dropout_p)

    def forward(self, Q, K, V, mask=None):
        n_batch = Q.shape[0]
        Q_feat = self.lin_Q(Q)
        K_feat = self.lin_K(K)
        V_feat = self.lin_V(V)
        Q_split = Q_feat.view(n_batch, -1, self.n_head, self.d_head).permute(0, 2, 1, 3)
        K_split = K_feat.view(n_batch, -1, self.n_head, self.d_head).permute(0, 2, 1, 3)
        V_split = V_feat.view(n_batch, -1, self.n_head, self.d_head).permute(0, 2, 1, 3)
        scores = torch.matmul(Q_split, K_split.transpose(-2, -1)) / np.sqrt(self.d_head)  # per-head size
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention = torch.softmax(scores, dim=-1)
        x_raw = torch.matmul(self.dropout(attention), V_split)
        x_rsh1 = x_raw.permute(0, 2, 1, 3).contiguous()
        x_rsh2 = x_raw.reshape(n_batch, -1, self.d_feat)  # should have used x_rsh1
        x = self.lin_O(x_rsh2)
        return {"Q_feat": Q_feat, "K_feat": K_feat, "V_feat": V_feat, "Q_split": Q_split, "K_split": K_split,
                "V_split": V_split, "scores": scores, "attention": attention, "x_raw": x_raw,
                "x_rsh1": x_rsh1, "x_rsh2": x_rsh2, "x": x}
