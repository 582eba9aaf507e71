"""Deterministic synthetic bilingual narratives, context turns and unit vectors for benchmarks.

Everything here is a pure function of (n, seed): the same call gives the same data on every
machine, so timings and results can be compared between runs and engineers.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

START = datetime(2025, 1, 1, tzinfo=UTC)

PEOPLE = ("Alice", "Bob", "Carol", "小明", "小红", "甜心", "照照", "老王", "Dave", "Eve")
ROLES = ("判断", "执行", "审查", "架构", "提问", "记录", "调试", "陪伴", "决策", "reviewer", "author")

# Topic words come in a Zipf-like spread (the order below is the popularity order), so the
# document-frequency filter of topic clustering has common words to drop and rare ones to keep.
ZH_TOPICS = (
    "记忆 系统 设计 问题 代码 数据库 模型 向量 聚类 边界 拒绝 逃避 调试 服务器 部署 项目 进度 "
    "朋友 公园 散步 天气 心情 音乐 电影 小说 旅行 城市 海边 咖啡 早餐 晚饭 医院 学校 考试 工作 "
    "会议 计划 预算 合同 客户 产品 市场 广告 设计师 工程师 老师 学生 母亲 父亲 孩子 猫 狗 花园 "
    "河流 山峰 森林 雨季 冬天 夏天 节日 礼物 生日 婚礼 电话 邮件 消息 照片 日记 梦境 信任 "
    "恐惧 勇气 孤独 自由 责任 承诺 误会 道歉 冲突 合作 沟通 习惯 健康 睡眠 运动 跑步 游泳 "
    "阅读 写作 绘画 摄影 烹饪 园艺 编程 算法 接口 缓存 日志 测试 发布 回滚 监控 告警 性能"
).split()
ZH_VERBS = "讨论 决定 发现 担心 希望 怀疑 修复 重构 学习 记录 回顾 拒绝 接受 解释 争论 整理 准备 完成".split()
ZH_ADJS = "复杂 有趣 困难 简单 安静 紧张 愉快 疲惫 温暖 奇怪 重要 危险 漂亮 清楚".split()
EN_TOPICS = (
    "memory retrieval embedding cluster kernel compiler release rollback deploy latency cache "
    "garden river mountain coffee breakfast meeting budget contract customer product design "
    "whale-listen boundary trust courage music novel travel ocean winter summer birthday "
    "python rust database vector index query schema migration worker queue broker redis "
    "sqlite postgres benchmark profiler debugger notebook sketch camera recipe marathon"
).split()
EN_VERBS = "discussed decided found worried hoped fixed refactored learned recorded reviewed".split()
TAGS = (*tuple(f"tag-{i}" for i in range(40)), "工作", "生活", "技术", "情绪", "关系", "梦")


def _zipf_choice(rng: random.Random, words: list[str] | tuple[str, ...]) -> str:
    # u**2.2 bunches indices at the front: the first words are common, the tail is rare.
    index = min(int(len(words) * rng.random() ** 2.2), len(words) - 1)
    return words[index]


def _chinese_sentence(rng: random.Random) -> str:
    a, b = rng.sample(PEOPLE[3:8], 2)
    return (
        f"{a}和{b}{rng.choice(ZH_VERBS)}了{_zipf_choice(rng, ZH_TOPICS)}的{_zipf_choice(rng, ZH_TOPICS)}，"
        f"觉得{rng.choice(ZH_ADJS)}，后来又{rng.choice(ZH_VERBS)}{_zipf_choice(rng, ZH_TOPICS)}。"
    )


def _english_sentence(rng: random.Random) -> str:
    a, b = rng.sample(PEOPLE[:3] + PEOPLE[8:], 2)
    return (
        f"{a} and {b} {rng.choice(EN_VERBS)} the {_zipf_choice(rng, EN_TOPICS)} "
        f"of the {_zipf_choice(rng, EN_TOPICS)} near the {_zipf_choice(rng, EN_TOPICS)}."
    )


def _sentence(rng: random.Random) -> str:
    return _chinese_sentence(rng) if rng.random() < 0.6 else _english_sentence(rng)


def _entities_role(rng: random.Random) -> str:
    people = rng.sample(PEOPLE, rng.randint(1, 3))
    shape = rng.random()
    if shape < 0.5:
        return "; ".join(f"{p}={'+'.join(rng.sample(ROLES, rng.randint(1, 2)))}" for p in people)
    if shape < 0.75:
        return "，".join(f"{p}：{rng.choice(ROLES)}" for p in people)
    if shape < 0.95:
        return "→".join(f"{p}({rng.choice(ROLES)})" for p in people)
    return ""


def narratives(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """`n` narrative dicts with ids 1..n, times rising about 7 minutes apart (jittered), UTC."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(1, n + 1):
        created = START + timedelta(minutes=7 * i + rng.randint(0, 5))
        rows.append(
            {
                "id": i,
                "gesture": _sentence(rng),
                "context": " ".join(_sentence(rng) for _ in range(rng.randint(0, 2))),
                "cognition_direction": _sentence(rng) if rng.random() < 0.5 else "",
                "tags": sorted(set(rng.sample(TAGS, rng.randint(0, 3)))),
                "entities_role": _entities_role(rng),
                "related_entities": rng.sample(PEOPLE, rng.randint(0, 2)),
                "importance": rng.randint(1, 5),
                "emotional": rng.randint(1, 5),
                "recurrence": rng.randint(1, 5),
                "unresolved": rng.randint(1, 5),
                "occurred_at": created - timedelta(minutes=rng.randint(0, 120)),
                "created_at": created,
            }
        )
    return rows


def context_turns(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """`n` context-turn dicts (ids 1..n) in sessions of bursty turns; gaps sometimes exceed 10 minutes."""
    rng = random.Random(seed + 1)
    rows: list[dict[str, Any]] = []
    at = START
    session = 0
    for i in range(1, n + 1):
        if rng.random() < 0.05:
            session += 1
            at += timedelta(hours=rng.randint(1, 12))
        else:
            at += timedelta(seconds=rng.choice((20, 45, 90, 240, 700, 1500)))
        role = "user" if i % 2 else "assistant"
        rows.append(
            {
                "id": i,
                "session_id": f"s{session}",
                "role": role,
                "speaker": rng.choice(PEOPLE) if role == "user" else "agent",
                "content": " ".join(_sentence(rng) for _ in range(rng.randint(1, 4))),
                "created_at": at,
            }
        )
    return rows


def vectors(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    """`n` random L2-normalized float32 rows of `dim` (C-contiguous)."""
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix
