"""How similar a query is to texts it has nothing to do with: the dense floor a row must clear to count as evidence.

e5's cosines lie in a narrow band that shifts with the query and with the language of the row (a
question in English sits closer to every English text than to any Chinese one), so no fixed
cosine tells related from unrelated. Each query is instead held against everyday sentences on
unrelated topics in each script: a row is dense evidence when its cosine lies `SPREADS` standard
deviations above their mean for its own script (mean and spread, not the best of them: one of
them may share the query's topic). Chosen on the LoCoMo dev questions and a bilingual set: nearly
every evidence turn clears it, and most nonsense queries' nearest rows do not. A text of a letter
or two (`MIN_LETTERS`) sits close to every query, nonsense most of all: it is never dense evidence.

In fusion the dense views are margins over the same floors (`hybrid`), so an English question meets
Chinese rows on their own terms.

A query that is not words at all ("zxqv plorth wibble") has a vector near the centre of everything,
so the reference sentences spread little around it and its nearest rows can clear their floor by
chance. Such a query also sits close to strings of nonsense (`NONSENSE`): a row is only evidence
when its margin over its floor beats the margin the nearest nonsense string, in either script,
reaches over its own floor. The bar is one margin for every script because babble in one script
says little about gibberish in another, while margins are the scale rows of both scripts share.
A real question's answer usually sits further above its floor than any nonsense string. The bar gates
evidence only; fusion keeps the margins over the sentence floor.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from tideline_core.embedding import Embedder
from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.numeric import np

SPREADS = 2.5
_IDENTIFIER = re.compile(r"[\w.+'-]+@[\w.-]+|https?://[!-~]+|[A-Za-z0-9_.'-]*\d[A-Za-z0-9_.'-]*", re.ASCII)
_HAN_CHARACTER = re.compile("[\u4e00-\u9fff\u3400-\u4dbf]")
MIN_LETTERS = 3
HAN, OTHER = "han", "latin"

_LATIN = (
    "The bus was ten minutes late this morning.",
    "I need to buy milk, eggs and bread.",
    "The meeting room on the second floor is booked.",
    "She painted the kitchen a pale yellow.",
    "My phone battery dies before lunch.",
    "We watched an old movie last night.",
    "The library closes early on holidays.",
    "He fixed the leaking tap in the bathroom.",
    "The cat sleeps on the windowsill all afternoon.",
    "Traffic on the bridge was terrible.",
    "I forgot my umbrella at the office.",
    "The soup needs a little more salt.",
    "They are renovating the old train station.",
    "The password must be changed every three months.",
    "Our neighbour plays the piano in the evening.",
    "The package was delivered to the wrong address.",
    "I started reading a novel about the sea.",
    "The garden needs watering twice a week.",
    "The printer is out of paper again.",
    "We had pizza for dinner.",
    "The concert tickets sold out in an hour.",
    "My brother lives in a small town by the coast.",
    "The coffee machine makes a strange noise.",
    "It rained all weekend.",
    "The report is due at the end of the month.",
    "I lost my keys somewhere in the park.",
    "The museum has a new exhibition on ancient coins.",
    "She is learning to play chess.",
    "The elevator has been broken since Monday.",
    "We planted tomatoes and basil on the balcony.",
    "The dog barks whenever the doorbell rings.",
    "I prefer tea without sugar.",
    "The flight was delayed because of fog.",
    "He collects stamps from old letters.",
    "The school play is next Friday.",
    "My laptop needs a software update.",
    "The bakery on the corner sells fresh croissants.",
    "We cleaned the garage on Saturday.",
    "The river froze over last winter.",
    "I called the bank about my card.",
    "ok",
    "thanks",
    "test",
    "hello there",
    "x",
)
_HAN = (
    "今天早上公交车晚了十分钟。",
    "我要去买牛奶、鸡蛋和面包。",
    "二楼的会议室已经被预订了。",
    "她把厨房刷成了淡黄色。",
    "我的手机电池撑不到中午。",
    "我们昨晚看了一部老电影。",
    "图书馆节假日关门很早。",
    "他修好了浴室里漏水的水龙头。",
    "猫整个下午都睡在窗台上。",
    "桥上的交通堵得很厉害。",
    "我把伞忘在办公室了。",
    "这汤还需要再加点盐。",
    "他们正在翻修老火车站。",
    "密码每三个月必须更换一次。",
    "邻居晚上会弹钢琴。",
    "包裹被送到了错误的地址。",
    "我开始读一本关于大海的小说。",
    "花园每周需要浇两次水。",
    "打印机又没纸了。",
    "我们晚饭吃了披萨。",
    "音乐会的票一个小时就卖完了。",
    "我哥哥住在海边的一个小镇。",
    "咖啡机发出奇怪的声音。",
    "整个周末都在下雨。",
    "报告月底要交。",
    "我把钥匙丢在公园里了。",
    "博物馆有一个关于古钱币的新展览。",
    "她在学下象棋。",
    "电梯从周一起就坏了。",
    "我们在阳台上种了番茄和罗勒。",
    "每次门铃一响，狗就叫。",
    "我喝茶不加糖。",
    "航班因为大雾延误了。",
    "他收集旧信上的邮票。",
    "学校的话剧在下周五。",
    "我的笔记本电脑需要更新软件。",
    "街角的面包店卖新鲜的牛角包。",
    "我们周六打扫了车库。",
    "去年冬天河面结冰了。",
    "我给银行打电话问了卡的事。",
    "好的",
    "谢谢",
    "测试",
    "你好",
    "嗯",
)

# Made-up words and babble, none of them a word of the language; only for the evidence bar.
_LATIN_NONSENSE = (
    "mrkl spoo dravnik",
    "quibbit zonk fral",
    "ptang vorsh yibble",
    "snerk blaff oomp",
    "gronk fubb zeetle",
    "jxw qpv tlk",
    "florp",
    "wug tove brillig",
)
_HAN_NONSENSE = ("叽里咕噜哇啦", "嘀嗒嘣嚓咚", "啦啦啦", "呜哩哇啦咕", "嗯嗯啊啊", "咿呀咿呀")

REFERENCES: Mapping[str, tuple[str, ...]] = {OTHER: _LATIN, HAN: _HAN}
NONSENSE: Mapping[str, tuple[str, ...]] = {OTHER: _LATIN_NONSENSE, HAN: _HAN_NONSENSE}


@dataclass(frozen=True)
class Floors:
    """Per script, the cosine a row's dense margin is taken over (`fusion`); the margin it must exceed to be
    evidence (`bar`: how far the query's nearest nonsense string lies above its script's floor, if above)."""

    fusion: dict[str, float]
    bar: float


def script_of(text: str) -> str:
    """`HAN` for a text written mostly in Chinese characters (each carries about a word), else `OTHER`.

    Identifiers (e-mail addresses, links, runs of letters and digits such as a phone number or a
    product model) are no language's words: a Chinese sentence giving a long e-mail address is
    Chinese. Counted as Latin letters they would put it on the other script's floor, far below
    its own for a Chinese query, and lift it above every Chinese row that bears on the question.
    """
    text = _IDENTIFIER.sub(" ", text)
    # Counted in C (a regex, `map`): a search asks this of every candidate's text.
    han = len(_HAN_CHARACTER.findall(text))
    letters = sum(map(str.isalpha, text)) - han
    return HAN if han and 3 * han >= letters else OTHER


def meaningful(text: str) -> bool:
    """Whether a text is long enough for its vector to say what it is about (`MIN_LETTERS` letters or digits)."""
    return sum(map(str.isalnum, text)) >= MIN_LETTERS


def row_script(text: str) -> str | None:
    """The script a row's floor is taken in (`script_of`); None for a text too short to mean anything."""
    return script_of(text) if meaningful(text) else None


class Reference:
    """The reference sentences' vectors, embedded once on first use (again after a failure)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._vectors: dict[str, np.ndarray] | None = None
        self._nonsense: dict[str, np.ndarray] | None = None
        self._lock = threading.Lock()

    def prepare(self) -> bool:
        """Embed the sentences now rather than on the first search that needs them; False without the model."""
        return self._load() is not None

    def floors(self, query: np.ndarray) -> Floors | None:
        """Per script, the floors (`Floors`) a row's cosine to `query` is held against; None without the model."""
        loaded = self._load()
        if loaded is None:
            return None
        vectors, nonsense = loaded
        q = np.asarray(query, dtype=np.float32)
        fusion, bar = {}, 0.0
        for script, matrix in vectors.items():
            cosines = matrix @ q
            fusion[script] = float(np.mean(cosines) + SPREADS * np.std(cosines))
            bar = max(bar, float(np.max(nonsense[script] @ q)) - fusion[script])
        return Floors(fusion=fusion, bar=bar)

    def _load(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None:
        with self._lock:
            if self._vectors is None or self._nonsense is None:
                try:
                    self._vectors = self._embed(REFERENCES)
                    self._nonsense = self._embed(NONSENSE)
                except (EmbedderUnavailable, ConfigurationError):
                    return None
            return self._vectors, self._nonsense

    def _embed(self, texts: Mapping[str, tuple[str, ...]]) -> dict[str, np.ndarray]:
        return {script: np.asarray(self.embedder.passages(list(t)), dtype=np.float32) for script, t in texts.items()}
