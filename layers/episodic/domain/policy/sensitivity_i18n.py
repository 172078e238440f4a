"""Sensitive personal disclosures in Spanish and German: the same kinds as the English patterns of
:mod:`episodic.domain.policy.sensitivity` (health, mental health, finances, beliefs, sexuality
and identity, family trouble, legal trouble), read on text with its accents folded away
("depresión" as "depresion", "Krankenhaus" and "Ärztin" as "arztin"), so a pattern matches
with or without the accents people skip when they type fast.

Chosen for precision, as the English ones are: a word that is only sometimes sensitive (an
"operación" of a company, a "Klinik" as a place name) needs a context word beside it.
"""

from __future__ import annotations

import unicodedata

_SPANISH: dict[str, str] = {
    "health": r"""
        diagnostic\w* | cancer | tumor\w* | quimio\w* | radioterapia | biopsia | mamografia
        | (la|le|lo|me|te|nos)\s+(operan|operaron|van\s+a\s+operar) | operad[oa] | cirugia | hospitalizad[oa]
        | internad[oa] | ingresad[oa] | urgencias | diabet\w* | embarazad[ao] | embarazo | aborto | fertilidad
        | alzheimer | demencia | parkinson | infarto | ictus | medicacion | pastillas | oncolog\w*
        | neurolog\w* | rehabilitacion | fisioterap\w* | (cadera|pierna|brazo)\s+rota | fractura\w* | nauseas
        | (el|la|mi|su|al)\s+(medic[oa]|doctor[a]?)\b | buscar\s+un\s+bebe | hospital\w* | curaciones
        | taquicardias?
    """,
    "mental_health": r"""
        ansiedad | ansios[oa] | ataques?\s+de\s+(panico|ansiedad) | depresion | deprimid[oa] | terapia
        | psicolog[oa]s? | psiquiatra | mi\s+analista | antidepresivos | autolesion\w* | suicid\w* | adiccion
        | desintoxicacion | salud\s+mental | duermo\s+fatal | no\s+duermo | durmiendo\s+fatal
    """,
    "finances": r"""
        deudas? | endeudad[oa]s? | (denegado|denegaron)\s+la\s+hipoteca | prestamo | morosidad | embargad\w+
        | desahucio | no\s+(me|nos)\s+alcanza | (llego|llegamos)\s+a\s+fin\s+de\s+mes | numeros\s+rojos
        | (el|al)\s+paro\b
        | (me|le|lo|la|nos)\s+(han|ha)?\s*(despedido|corrido|corrieron|despidieron) | liquidacion
        | pedir\s+(el\s+)?dinero | dejarnos\s+dinero | (bajan|bajaron)\s+el\s+sueldo
    """,
    "beliefs": r"""
        (soy|somos)\s+(musulman\w*|catolic[oa]s?|cristian[oa]s?|judi[oa]s?|evangelic[oa]s?|ate[oa]s?|budistas?)
        | mi\s+fe\b | religion | rezar | rezo\b | a\s+misa | mezquita | sinagoga | ramadan
        | vot(e|o|amos|are)\s+(a|al|por)\b
    """,
    "sexuality_identity": r"""
        gay | lesbiana | bisexual | queer | homosexual | lgbt\w* | (salir|sali|salio)\s+del\s+armario
    """,
    "family_trouble": r"""
        divorci\w+ | (estamos|nos\s+hemos|se\s+han|me\s+he)\s+separad[oa]s? | separacion | custodia
        | infidelidad | me\s+engan\w+ | murio | fallecio
        | falleci\w+ | funeral | entierro | velorio | maltrato | violencia\s+de\s+genero
    """,
    "legal": r"""
        detenid[oa] | arrestad[oa] | (el|un)\s+juicio | juzgado | demandad[oa] | abogad[oa] | carcel | prision
        | denuncia\w* | antecedentes\s+penales | el\s+juez
    """,
}

_GERMAN: dict[str, str] = {
    "health": r"""
        diagnos\w* | krebs\w* | tumor\w* | chemo\w* | biopsie | operiert | operation\s+(am|an\s+der|an\s+den)
        | krankenhaus | klinikum | notaufnahme | diabet\w* | schwanger\w* | fehlgeburt | demenz | alzheimer
        | parkinson | herzinfarkt | schlaganfall | medikament\w* | tabletten | (frauen|fach|haus)?arztin
        | (frauen|fach|haus)?arzt\b | arzte\b | onkolog\w* | physiotherap\w* | reha\b
        | (knochen|bein|arm|hand|fuss|oberschenkelhals|huft|becken)bruch
        | kunstlich\w*\s+befruchtung | icsi | ivf | hormonspritzen | embryo\w* | ultraschall | krankgeschrieben
        | narkose | neue\s+hufte | bluttest
    """,
    "mental_health": r"""
        therapie | therapeut\w* | depression\w* | depressiv | angststorung | panikattacke\w* | burn-?out
        | psycholog\w* | psychiater\w* | antidepressiva | suizid\w* | sucht\b | psychisch\w* | adhs
        | schlaf\w*\s+(seit|schlecht)
    """,
    "finances": r"""
        schulden | verschuldet | kredit\b | pleite | insolven\w* | mahnung\w* | zwangsraumung | arbeitslos\w*
        | (mir|uns|ihm|ihr)\s+(wurde\s+|wird\s+|hat\s+\w+\s+)?gekundigt
        | kundigung\s+(bekommen|gekriegt|erhalten) | dispo\b | nachzahlung | in\s+raten | geldsorgen | miete\s+nicht
    """,
    "beliefs": r"""
        (bin|sind)\s+(muslim\w*|christ\w*|katholisch|evangelisch|judisch|jude|judin|atheist\w*|buddhist\w*)
        | in\s+die\s+(kirche|moschee|synagoge) | mein\s+glaube | beten | gebet | ramadan
        | (cdu|csu|spd|grune|afd|fdp|linke)\s+gewahlt
    """,
    "sexuality_identity": r"""
        schwul | lesbisch | bisexuell | queer | (bin|ist|sind)\s+trans\b | transgender | coming-?out
        | geoutet | nicht-?binar
    """,
    "family_trouble": r"""
        scheidung | geschieden | uns\s+(\w+\s+){0,4}getrennt | getrennt\s+leben\w* | trennung | sorgerecht
        | affare | betrogen | gestorben | verstorben
        | beerdigung | trauer\w* | hausliche\s+gewalt | misshandel\w*
    """,
    "legal": r"""
        verhaftet | festgenommen | angeklagt | vor\s+gericht | \w*gerichtstermin | anwalt | anwaltin
        | verklagt | gefangnis
        | bewahrung | vorstrafe | strafanzeige
    """,
}

KINDS: dict[str, list[str]] = {kind: [_SPANISH[kind], _GERMAN[kind]] for kind in _SPANISH}
"""Each kind's patterns, one a language, written across lines (compiled by the English module)."""

_FOLDED = {ord("ß"): "ss", ord("ẞ"): "ss"}


def folded(text: str) -> str:
    """``text`` without its accents and umlauts ("Ärztin" -> "Arztin", "depresión" ->
    "depresion", "ß" -> "ss"): combining marks dropped after canonical decomposition. An ASCII
    text has none of them, and is its own folding (most texts: no pass over its characters)."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFD", text.translate(_FOLDED))
    return "".join(char for char in decomposed if not unicodedata.combining(char))
