"""Required assignment: multi-headed attention, one intermediate tensor at a time.
필수 과제: 멀티 헤드 어텐션을 중간 텐서 하나하나까지 직접 구현하기.

Fill in the two classes below and keep every name and argument as it is: the grader finds them by name and
calls them with keyword arguments. `grade check` in this folder runs the public checks (the shapes printed in
the notes, the constructor, the scaling); after you submit, hidden checks also compare the VALUES of every
intermediate tensor with the instructor's version, with the same weights copied into your layers. Each step is
graded on its own: if your split is right but your merge is wrong, you still earn the split's points.

아래 두 클래스를 완성하세요. 이름과 인자는 그대로 두어야 합니다 (채점기는 이름으로 찾고 키워드 인자로
호출합니다). 이 폴더에서 `grade check`를 실행하면 공개 검사(노트에 출력된 shape, 생성자, 스케일링)를 볼 수
있습니다. 제출 후에는 같은 가중치를 복사해 넣은 상태에서 모든 중간 텐서의 값을 교수자 구현과 비교하는
비공개 검사도 실행됩니다. 단계마다 따로 채점하므로, 분할(split)은 맞고 병합(merge)만 틀렸다면 분할 점수는
그대로 받습니다.

SCALING / 스케일링 (read this / 꼭 읽으세요)
    GRADED: the scores of every head are divided by sqrt(d_feat), where d_feat = K.size(-1) is the size of the
    UNSPLIT input K, exactly as the course notes write it (d_K = K.size()[-1] before the split).
    The paper "Attention Is All You Need" divides by sqrt(d_head) = sqrt(d_feat // n_head) instead; your
    instructor may switch the assignment's `scale` setting from "full" (the default, sqrt(d_feat)) to "head"
    (sqrt(d_head)) and will announce it. The public check `test_scores_scaling` names the rule in force.
    채점 기준: 각 헤드의 점수를 sqrt(d_feat)로 나눕니다. d_feat = K.size(-1)은 분할하기 전 입력 K의 크기로,
    강의 노트의 코드(분할 전의 d_K = K.size()[-1])와 같습니다. 논문 "Attention Is All You Need"는 대신
    sqrt(d_head) = sqrt(d_feat // n_head)로 나눕니다. 교수자가 과제 설정 `scale`을 "full"(기본값, sqrt(d_feat))에서
    "head"(sqrt(d_head))로 바꿀 수 있으며, 그때는 공지합니다. 공개 검사 `test_scores_scaling`의 메시지에 적용 중인
    규칙이 나옵니다.

MASKS / 마스크
    A mask holds 1 (or True) where a query may look at a key and 0 (or False) where it may not. Scores at
    positions with mask == 0 become -1e9 (not -inf) before the softmax, so that a row with nothing to look at
    stays finite. The mask broadcasts against the scores: (n_Q, n_K) or (n_batch, n_Q, n_K) against
    ScaledDotProductAttention's (n_batch, n_Q, n_K) scores; (n_Q, n_K), (n_batch, 1, n_Q, n_K) or
    (n_batch, 1, 1, n_K) against MultiHeadedAttention's (n_batch, n_head, n_Q, n_K) scores (the head axis
    needs its 1).
    마스크는 쿼리가 키를 볼 수 있는 위치에 1(또는 True), 볼 수 없는 위치에 0(또는 False)을 담습니다.
    softmax 전에 mask == 0인 위치의 점수를 -inf가 아닌 -1e9로 바꿔서, 볼 것이 하나도 없는 행도 유한한 값을
    갖게 합니다. 마스크는 점수에 브로드캐스트됩니다: ScaledDotProductAttention의 (n_batch, n_Q, n_K) 점수에는
    (n_Q, n_K) 또는 (n_batch, n_Q, n_K), MultiHeadedAttention의 (n_batch, n_head, n_Q, n_K) 점수에는
    (n_Q, n_K), (n_batch, 1, n_Q, n_K) 또는 (n_batch, 1, 1, n_K) (헤드 축 자리에 1이 필요합니다).
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledDotProductAttention(nn.Module):
    """Single attention over the LAST TWO axes; every axis in front of them is a batch axis.
    마지막 두 축에 대한 어텐션입니다. 그 앞의 축은 모두 배치 축입니다.

    forward(Q, K, V, mask=None) -> (out, attention)
        Q: (..., n_Q, d_K)   K: (..., n_K, d_K)   V: (..., n_K, d_V)
        attention = softmax(Q K^T / sqrt(d_K)) over the keys   -> (..., n_Q, n_K)
        out       = attention V                                 -> (..., n_Q, d_V)
        d_K is K.size(-1). n_Q may differ from n_K, and d_V from d_K.
        d_K는 K.size(-1)입니다. n_Q와 n_K, d_V와 d_K는 서로 달라도 됩니다.
    Works on 3-D inputs (n_batch, n, d) and on 4-D multi-head inputs (n_batch, n_head, n, d) alike.
    3차원 입력 (n_batch, n, d)과 4차원 멀티 헤드 입력 (n_batch, n_head, n, d)에서 똑같이 동작해야 합니다.
    """

    def forward(self, Q, K, V, mask=None):
        raise NotImplementedError("ScaledDotProductAttention.forward / 구현하세요")


class MultiHeadedAttention(nn.Module):
    """Multi-headed attention that returns every intermediate tensor.
    모든 중간 텐서를 반환하는 멀티 헤드 어텐션입니다.

    __init__(d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None)
        - raise ValueError when d_feat is not a multiple of n_head
          d_feat이 n_head의 배수가 아니면 ValueError를 발생시키세요
        - store d_feat, n_head, d_head = d_feat // n_head, actv, USE_BIAS, dropout_p
        - create, in this order, four layers nn.Linear(d_feat, d_feat, bias=USE_BIAS) named
          self.lin_Q, self.lin_K, self.lin_V, self.lin_O, then self.dropout = nn.Dropout(p=dropout_p)
          이 순서로 nn.Linear(d_feat, d_feat, bias=USE_BIAS) 네 개(self.lin_Q, self.lin_K, self.lin_V,
          self.lin_O)와 self.dropout = nn.Dropout(p=dropout_p)를 만드세요
        - `actv` is only stored (the projections stay linear). `device` is accepted as in the notes, which do
          not use it: leave the layers where they are (whoever uses the layer moves it with .to(device))
          `actv`는 저장만 합니다 (투영은 선형 그대로). `device`는 노트처럼 받기만 하고 레이어를 옮기지 않습니다
          (레이어를 쓰는 쪽에서 .to(device)로 옮깁니다)

    forward(Q, K, V, mask=None) -> dict with these 12 entries / 다음 12개 항목의 dict:
        Q_feat    = lin_Q(Q)                         (n_batch, n_Q, d_feat)
        K_feat    = lin_K(K)                         (n_batch, n_K, d_feat)
        V_feat    = lin_V(V)                         (n_batch, n_K, d_feat)
        Q_split   Q_feat cut into heads              (n_batch, n_head, n_Q, d_head)
        K_split   K_feat cut into heads              (n_batch, n_head, n_K, d_head)
        V_split   V_feat cut into heads              (n_batch, n_head, n_K, d_head)
                  (view as (n_batch, -1, n_head, d_head), then move the head axis to position 1)
                  ((n_batch, -1, n_head, d_head)로 view한 뒤 헤드 축을 1번 위치로 옮기세요)
        scores    Q_split K_split^T / sqrt(d_feat),  (n_batch, n_head, n_Q, n_K)
                  then -1e9 where mask == 0          (see SCALING above / 위의 스케일링 참고)
        attention softmax of scores over the keys    (n_batch, n_head, n_Q, n_K)
        x_raw     dropout(attention) V_split         (n_batch, n_head, n_Q, d_head)
        x_rsh1    x_raw with the head axis moved     (n_batch, n_Q, n_head, d_head), contiguous
                  behind the query axis
        x_rsh2    x_rsh1 with the heads glued back   (n_batch, n_Q, d_feat)
        x         = lin_O(x_rsh2)                    (n_batch, n_Q, d_feat)
    Return the scores after the mask and the attention before dropout.
    scores는 마스크를 적용한 뒤의 값을, attention은 dropout 전의 값을 반환하세요.
    """

    def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):
        super().__init__()
        raise NotImplementedError("MultiHeadedAttention.__init__ / 구현하세요")

    def forward(self, Q, K, V, mask=None):
        raise NotImplementedError("MultiHeadedAttention.forward / 구현하세요")
