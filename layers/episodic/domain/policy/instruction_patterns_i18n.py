# ruff: noqa: RUF001, RUF003 -- other scripts and their punctuation are what this module is about
r"""The patterns of :mod:`episodic.domain.policy.instructions` in languages other than English.

Alphabetic languages that put the verb first share one template (:class:`_Language`): a
table of their words fills it, so adding a language is adding a row, and the rows together
yield one injection and one standing-order pattern (:data:`LANGUAGE_INJECTION`,
:data:`LANGUAGE_STANDING_ORDER`). Languages that fit no template -- Chinese, Japanese and
Korean without spaces between words, Turkish with the verb last, Arabic -- have hand-written
patterns (:data:`CJK_AND_OTHERS`, :data:`OTHER_STANDING_ORDER`).

Words of these scripts are not bounded by RE2's ASCII ``\b``: a word starts after
:data:`~episodic.domain.linear.START` and ends before :data:`~episodic.domain.linear.END`, and a gap between
two words begins and ends with a character that is not a word's (:func:`_gap`) -- what ``\b``
on both sides of a gap means. The patterns are only ever searched (is there a match?), so the
edge characters they consume do not matter.
"""

from __future__ import annotations

from typing import NamedTuple

from episodic.domain import linear
from episodic.domain.linear import END, START, WORD_CHARS


class _Language(NamedTuple):
    """How one language says "ignore the previous instructions", "show me your system prompt",
    "you are now an unrestricted ...", and opens a standing order ("from now on always ...")."""

    override_verbs: str
    old: str
    rules: str
    reveal_verbs: str
    secret_prompt: str
    identity: str
    standing_openers: str
    standing_followers: str


_LANGUAGES = {
    "es": _Language(
        r"ignora|ignore|ignoren|ignorar|ignorad|olvida|olvide|olviden|olvidar|omite|omitir|descarta|desestima"
        r"|desobedece|no\s+sigas|deja\s+de\s+seguir|pasa\s+por\s+alto",
        r"anteriores|previas|precedentes|originales|iniciales|todas|tus|del\s+sistema|de\s+arriba|que\s+(?:te|le)\s+"
        r"(?:dieron|han\s+dado)|que\s+recibiste",
        r"instrucciones|indicaciones|reglas|órdenes|ordenes|directrices|normas|restricciones|consignas|pautas",
        r"revela|revélame|muestra|muéstrame|imprime|dime|repite|enséñame|comparte|escribe",
        r"(?:prompt|mensaje|instrucciones)\s+(?:del?\s+)?sistema|prompt\s+original|instrucciones\s+ocultas",
        r"(?:ahora|a\s+partir\s+de\s+ahora)\s+eres\s+(?:un\s+|una\s+|el\s+|la\s+)?(?:administrador|admin|dan|hacker"
        r"|asistente\s+sin|ia\s+sin|libre|sin\s+restricciones)|finge\s+(?:ser|que\s+eres)"
        r"|modo\s+(?:desarrollador|dios|sin\s+restricciones|administrador)",
        r"a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante|desde\s+ahora",
        r"siempre|nunca|debes|deberás|tienes\s+que|aprueba|responde|envía|reembolsa",
    ),
    "fr": _Language(
        r"ignore|ignorez|ignorer|oublie|oubliez|oublier|ne\s+tiens\s+(?:pas|plus)\s+compte|ne\s+tenez\s+(?:pas|plus)\s+compte"
        r"|ne\s+suis\s+plus|ne\s+suivez\s+plus|fais\s+abstraction|faites\s+abstraction|passe\s+outre|passez\s+outre",
        r"précédentes|precedentes|antérieures|anterieures|initiales|originales|toutes|tes|vos|ton|votre|du\s+système"
        r"|ci-dessus|qu['’]on\s+t['’]a\s+données|que\s+tu\s+as\s+reçues",
        r"instructions|consignes|règles|regles|directives|ordres|restrictions|indications",
        r"révèle|révélez|revele|affiche|affichez|montre|montrez|imprime|répète|répétez|donne|donnez|dis|dites"
        r"|écris|recopie",
        r"(?:prompt|message|invite|instructions?)\s+(?:du\s+|de\s+)?(?:système|systeme)|prompt\s+initial"
        r"|instructions\s+cachées",
        r"(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais|dorénavant)\s+(?:un\s+|une\s+|l['’]|le\s+|la\s+)?"
        r"(?:administrateur|admin|dan|hacker|assistant\s+sans|ia\s+sans|libre|sans\s+restriction|en\s+mode)"
        r"|(?:fais|faites)\s+semblant\s+d['’]être|mode\s+(?:développeur|developpeur|dieu|sans\s+restriction)",
        r"à\s+partir\s+de\s+maintenant|désormais|dorénavant|à\s+l['’]avenir",
        r"tu\s+dois|vous\s+devez|toujours|jamais|approuve|approuvez|réponds|répondez|envoie|envoyez|tu\s+\w+ras"
        r"|vous\s+\w+rez",
    ),
    "de": _Language(
        r"ignoriere|ignorier|ignorieren\s+sie|vergiss|vergessen\s+sie|missachte|übergehe|uebergehe"
        r"|befolge\s+nicht\s+mehr|hör\s+auf",
        r"vorherigen|bisherigen|früheren|vorigen|obigen|ursprünglichen|alle|deine|sämtliche|system|die\s+du\s+bekommen"
        r"|die\s+dir\s+gegeben",
        r"anweisungen|instruktionen|befehle|regeln|vorgaben|richtlinien|einschränkungen|systemanweisungen",
        r"zeig|zeige|zeigen\s+sie|gib|geben\s+sie|verrate|nenne|wiederhole|schreib|druck",
        r"system-?\s?prompt|systemanweisungen|systemnachricht|ursprünglichen\s+anweisungen"
        r"|versteckten\s+(?:regeln|anweisungen)",
        r"du\s+bist\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt)\s+(?:ein\s+|eine\s+|der\s+|die\s+)?(?:administrator|admin"
        r"|dan|hacker|uneingeschränkt|frei|im\s+entwicklermodus|assistent\s+ohne)|tu\s+so,?\s+als\s+(?:wärst|seist)"
        r"|(?:entwickler|gott|admin)modus",
        r"ab\s+jetzt|ab\s+sofort|von\s+nun\s+an|in\s+zukunft",
        r"immer|nie|niemals|musst\s+du|sollst\s+du|genehmige|antworte|sende",
    ),
    "pt": _Language(
        r"ignore|ignora|ignorar|ignorem|esqueça|esqueca|esquece|esqueçam|desconsidere|desconsidera|não\s+siga"
        r"|deixe\s+de\s+seguir|pare\s+de\s+seguir",
        r"anteriores|prévias|previas|originais|iniciais|todas|suas|tuas|do\s+sistema|acima|que\s+(?:você|tu)\s+recebeu"
        r"|que\s+te\s+deram",
        r"instruções|instrucoes|regras|orientações|orientacoes|diretrizes|ordens|restrições|comandos",
        r"revele|revela|mostre|mostra|exiba|imprima|diga|repita|escreva|compartilhe",
        r"(?:prompt|mensagem|instruções)\s+(?:do|de)\s+sistema|prompt\s+original|instruções\s+ocultas",
        r"(?:agora\s+você\s+é|você\s+agora\s+é|agora\s+tu\s+és|a\s+partir\s+de\s+agora\s+você\s+é)\s+"
        r"(?:um\s+|uma\s+|o\s+|a\s+)?(?:administrador|admin|dan|hacker|livre|assistente\s+sem|ia\s+sem"
        r"|sem\s+restrições)|finja\s+(?:ser|que\s+é)|modo\s+(?:desenvolvedor|deus|administrador)",
        r"a\s+partir\s+de\s+agora|de\s+agora\s+em\s+diante|daqui\s+em\s+diante|doravante",
        r"sempre|nunca|você\s+deve|deve|aprove|responda|envie",
    ),
    "it": _Language(
        r"ignora|ignorare|ignorate|dimentica|dimenticare|dimenticate|trascura|non\s+seguire|smetti\s+di\s+seguire"
        r"|lascia\s+perdere|lasciate\s+perdere",
        r"precedenti|anteriori|originali|iniziali|tutte|tue|di\s+sistema|del\s+sistema|sopra|che\s+ti\s+hanno\s+dato"
        r"|che\s+hai\s+ricevuto",
        r"istruzioni|regole|indicazioni|direttive|ordini|restrizioni|comandi|linee\s+guida",
        r"rivela|rivelami|mostra|mostrami|stampa|ripeti|dimmi|scrivi|condividi",
        r"prompt\s+(?:di|del)\s+sistema|messaggio\s+di\s+sistema|istruzioni\s+(?:di\s+sistema|nascoste)"
        r"|prompt\s+originale",
        r"(?:ora|adesso|da\s+ora)\s+sei\s+(?:un\s+|una\s+|l['’]|il\s+)?(?:amministratore|admin|dan|hacker|libero"
        r"|assistente\s+senza|ia\s+senza|senza\s+restrizioni|in\s+modalità)|fingi\s+di\s+essere"
        r"|modalità\s+(?:sviluppatore|dio|amministratore)",
        r"d['’]ora\s+in\s+(?:poi|avanti)|da\s+ora\s+in\s+(?:poi|avanti)|da\s+adesso\s+in\s+poi",
        r"sempre|mai|devi|approva|rispondi|invia",
    ),
    "ru": _Language(
        r"игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте|отбрось|отбросьте|не\s+следуй"
        r"|перестань\s+следовать|не\s+соблюдай",
        r"предыдущие|прежние|предшествующие|прошлые|системные|все|свои|исходные|вышеуказанные",
        r"инструкции|инструкций|указания|указаний|правила|правил|команды|ограничения|директивы",
        r"покажи|выведи|раскрой|повтори|напиши|расскажи|озвучь|скопируй",
        r"системн\w*\s+(?:промпт\w*|инструкци\w*|подсказк\w*|сообщени\w*)|исходн\w*\s+(?:промпт\w*|инструкци\w*)"
        r"|скрыт\w*\s+(?:правил\w*|инструкци\w*)",
        r"(?:теперь\s+ты|ты\s+теперь|отныне\s+ты|с\s+этого\s+момента\s+ты)\s+(?:—\s*)?(?:dan|свободен|не\s+ограничен"
        r"|без\s+ограничений|хакер|администратор|админ)|притворись|режим\s+(?:разработчика|администратора|бога)",
        r"с\s+этого\s+момента|отныне|впредь",
        r"всегда|никогда|ты\s+должен|должен|одобряй|отвечай|отправляй",
    ),
    "nl": _Language(
        r"negeer|vergeet|volg\s+niet\s+langer|stop\s+met\s+het\s+volgen\s+van",
        r"eerdere|vorige|voorgaande|oorspronkelijke|alle|je|jouw|systeem",
        r"instructies|opdrachten|regels|richtlijnen|beperkingen|aanwijzingen",
        r"toon|laat|geef|herhaal|print|onthul|vertel",
        r"systeem-?\s?prompt|systeeminstructies|systeembericht|oorspronkelijke\s+instructies"
        r"|verborgen\s+(?:regels|instructies)",
        r"je\s+bent\s+(?:nu|vanaf\s+nu)\s+(?:de\s+|een\s+)?(?:beheerder|admin|dan|hacker|assistent\s+zonder"
        r"|onbeperkt|vrij)|doe\s+alsof\s+je|(?:ontwikkelaars|beheerders)modus",
        r"vanaf\s+nu|voortaan|van\s+nu\s+af\s+aan",
        r"altijd|nooit|moet\s+je|keur|antwoord|stuur",
    ),
    "pl": _Language(
        r"zignoruj|ignoruj|zapomnij|pomiń|nie\s+stosuj\s+się\s+do|przestań\s+stosować",
        r"wcześniejsze|poprzednie|wszystkie|dotychczasowe|systemowe|twoje",
        r"polecenia|poleceń|instrukcje|instrukcji|zasady|zasad|reguły|wytyczne",
        r"pokaż|wyświetl|ujawnij|podaj|wypisz|powtórz",
        r"prompt\s+systemowy|instrukcje\s+systemowe|komunikat\s+systemowy|ukryte\s+(?:zasady|instrukcje)",
        r"jesteś\s+teraz\s+(?:\w+\s+)?(?:administratorem|adminem|dan|hakerem|asystentem\s+bez)|udawaj,?\s+że\s+jesteś",
        r"od\s+teraz|od\s+tej\s+chwili|od\s+dziś|od\s+dzisiaj",
        r"zawsze|nigdy|musisz|zatwierdzaj|akceptuj|odpowiadaj|wysyłaj",
    ),
    "sv": _Language(
        r"strunta\s+i|ignorera|glöm|bortse\s+från|sluta\s+följa",
        r"tidigare|alla|föregående|ursprungliga|du\s+har\s+fått|dina",
        r"instruktionerna|instruktioner|reglerna|regler|direktiv|anvisningar|anvisningarna",
        r"visa|skriv\s+ut|avslöja|upprepa|berätta",
        r"systemprompt(?:en)?|systeminstruktion(?:er|erna)?|dolda\s+(?:regler|instruktioner)",
        r"du\s+är\s+nu\s+(?:en\s+|ett\s+)?(?:administratör|admin|dan|hacker|assistent\s+utan)|låtsas\s+att\s+du",
        r"från\s+och\s+med\s+nu|hädanefter|framöver",
        r"alltid|aldrig|måste|godkänn|svara|skicka",
    ),
}

_SOV = {
    # Subject-object-verb languages put the verb last: "önceki tüm talimatları unut"
    "tr": (
        r"önceki|tüm|bütün|eski|sistem|verilen",
        r"talimatları|talimatlar|kuralları|kurallar|komutları|yönergeleri|yönergeler",
        r"unut|yoksay|görmezden\s+gel|dikkate\s+alma|boşver|uyma",
    ),
}

_NOT_WORD = rf"[^{WORD_CHARS}]"
_NOT_GAP = rf"[^{WORD_CHARS}.!?\n]"
"""Where a word ends, inside a gap that stays in one sentence."""


def _gap(longest: int, stops: str = ".!?\n") -> str:
    r"""Between two words: 1 to ``longest`` characters other than ``stops``, the first and the last
    not a word's (where a ``\b``-bounded word would end and the next begin)."""
    edge = rf"[^{WORD_CHARS}{stops}]"
    return rf"{edge}(?:[^{stops}]{{0,{longest - 2}}}?{edge})?"


def _injection(lang: _Language) -> str:
    verbs, old, rules = lang.override_verbs, lang.old, lang.rules
    return (
        rf"{START}(?:{verbs}){_gap(40)}(?:{old}){_gap(40)}(?:{rules}){END}"  # "ignora todas las ... instrucciones"
        rf"|{START}(?:{verbs}){_gap(40)}(?:{rules}){_gap(25)}(?:{old}){END}"  # "... instrucciones anteriores"
        rf"|{START}(?:{lang.reveal_verbs}){_NOT_GAP}[^.!?\n]{{0,59}}?(?:{lang.secret_prompt})"
        rf"|{START}(?:{lang.identity})"
    )


def _standing(lang: _Language) -> str:
    """An opener, up to two words, then a follower: "a partir de ahora, siempre ..."."""
    return (
        rf"{START}(?:{lang.standing_openers}){_NOT_WORD}{{1,3}}(?:[{WORD_CHARS}]+{_NOT_WORD}+){{0,2}}?"
        rf"(?:{lang.standing_followers}){END}"
    )


LANGUAGE_INJECTION = linear.compile(
    "|".join(f"(?:{_injection(lang)})" for lang in _LANGUAGES.values()), ignore_case=True
)
LANGUAGE_STANDING_ORDER = linear.compile(
    "|".join(f"(?:{_standing(lang)})" for lang in _LANGUAGES.values()), ignore_case=True
)

_CJK_INJECTION = [
    # Chinese
    r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|不要遵守|不再遵守|放弃|抛开)[^。！？\n]{0,10}?"
    r"(?:之前|以前|先前|上面|上述|前面|所有|全部|你的|原来|原有|系统)[^。！？\n]{0,8}?(?:指令|指示|说明|规则|提示|命令|限制|设定)",
    r"(?:显示|透露|输出|告诉我|打印|重复|展示|说出|泄露)[^。！？\n]{0,8}?(?:系统提示|系统指令|系统消息|初始提示|隐藏的?(?:规则|指令))",
    r"(?:你现在是|从现在开始你是|现在你是|你将扮演|扮演)[^。！？\n]{0,6}?(?:不受限制|没有限制|无限制|自由|dan|黑客|管理员)",
    r"(?:开发者|管理员|上帝)模式",
    # Japanese
    r"(?:以前|前|上記|これまで|先ほど|元|最初|全て|すべて|システム)の?[^。！？\n]{0,8}?(?:指示|命令|ルール|指令|制約|設定)"
    r"[^。！？\n]{0,6}?(?:を|は)[^。！？\n]{0,6}?(?:無視|忘れ|破棄)",
    r"(?:システムプロンプト|システムメッセージ|初期プロンプト|隠された(?:指示|ルール))[^。！？\n]{0,10}?(?:表示|教え|出力|見せ|開示|書き出)",
    r"(?:今から|これから|今後)(?:あなた|君|お前)は[^。！？\n]{0,10}?(?:管理者|制限のない|無制限|dan|ハッカー)|(?:開発者|管理者)モード",
    # Turkish
    rf"{START}(?:{_SOV['tr'][0]}){_gap(40)}(?:{_SOV['tr'][1]}){_gap(40)}(?:{_SOV['tr'][2]})",
    r"(?:sistem\s+istemini|sistem\s+talimatlarını|gizli\s+kuralları)[^.!?\n]{0,40}?(?:göster|yaz|paylaş|açıkla)",
    rf"{START}artık\s+sen\s+(?:bir\s+)?(?:yöneticisin|admin|dan|hacker)",
    # Arabic
    r"(?:تجاهل|انس|اترك|لا\s+تتبع)[^.،!؟\n]{0,20}?(?:التعليمات|الأوامر|القواعد|الإرشادات)",
    r"(?:اعرض|أظهر|اكشف|اطبع)[^.،!؟\n]{0,20}?(?:موجه|موجّه|تعليمات)\s+النظام",
    # addressed to the assistant that reads the note later (Japanese)
    r"(?:読む|読んだ|見る)(?:アシスタント|AI|エージェント|ボット)(?:へ|に)",
    # Korean
    r"(?:이전|앞|위|기존|모든|원래|시스템)[^.!?\n]{0,8}?(?:지시|명령|지침|규칙|제한)[^.!?\n]{0,6}?(?:무시|잊어)",
    r"(?:시스템\s*프롬프트|시스템\s*메시지|숨겨진\s*(?:지시|규칙))[^.!?\n]{0,8}?(?:보여|공개|출력|알려|말해)",
    r"(?:지금부터|이제부터|이제)\s*(?:너는|당신은|넌)[^.!?\n]{0,10}?(?:관리자|제한\s*없는|무제한|dan|해커)|(?:개발자|관리자)\s*모드",
]

CJK_AND_OTHERS = linear.compile("|".join(_CJK_INJECTION), ignore_case=True)

OTHER_STANDING_ORDER = linear.compile(
    "|".join(
        [
            r"(?:从现在开始|从今以后|从今天起|今后)[，,]?\s*(?:你)?\s*(?:必须|总是|永远|始终|一律|都要|一定要)",
            r"(?:今後|これからは|今からは)[、,]?\s*(?:常に|必ず|絶対に|いつも)",
            r"(?:지금부터|앞으로|이제부터)\s*(?:항상|절대|반드시|모든)",
            r"من\s+الآن\s+فصاعد",
            rf"{START}(?:bundan\s+sonra|şu\s+andan\s+itibaren){_gap(30)}(?:her\s+zaman|asla|daima){END}",
        ]
    ),
    ignore_case=True,
)
