"""Chapter 12 — English → German sentences made on the spot, with real German grammar.

The numbers task of chapter 08 reorders digits; real sentences ask more of attention. This
generator writes English sentences and their German translations from a lexicon written for it
(107 nouns, 56 adjectives, 74 verbs and some 40 small words) and a handful of grammar rules,
seeded, in any amount, with no download:

* **gender and case**: every German noun is masculine, feminine or neuter, and its article and
  adjective change with its role: *der* Hund sieht *den* Hund, mit *dem* Hund;
* **adjective endings** after *der* / *dieser* (weak), after *ein* / *kein* / *mein* (mixed)
  and with no article (strong): *der alte* Mann, *ein alter* Mann, *alte* Männer, *mit kaltem* Wasser;
* **indirect objects** in the dative, and verbs that take the dative: *gibt dem Kind einen Ball*,
  *hilft der Frau*; the English "gives a ball to the child" becomes the same German;
* **weak masculine nouns**: der Junge → den Junge*n*, dem Junge*n*;
* **prepositions** with their case, the two-way ones by meaning (*im* Garten / *in den* Garten),
  and the contractions im, ins, zum, zur;
* **verb second** in main clauses (*Heute sieht* der Mann …), **verb first** in questions,
  **verb last** in subordinate and relative clauses (…, *weil der Mann den Hund sieht*);
* the **sentence bracket**: separable verbs (ruft … *an*), modal verbs (will … *sehen*) and the
  perfect (*hat* … *gesehen*, *ist* … *gelaufen*), which German uses for the English simple past;
* **relative clauses**: the pronoun takes gender and number from its noun and case from its role
  (der Mann, *der* … sieht; die Kinder, *denen* der Lehrer hilft; der Lehrer, *dem* der Junge zuhört);
* **plural** nouns and verb agreement, and *essen* for people but *fressen* for animals;
* English **do-support** in questions (*Does* the man see …? → *Sieht* der Mann …?).
* the **genitive** after its noun: "the man's dog" → *der Hund des Mannes*, "my sisters' house"
  → *das Haus meiner Schwestern*;
* **object pronouns**: *mich, ihn, uns, sie* / *mir, ihm, uns, ihnen*, early in the middle field,
  before the noun objects (*gibt ihm den Ball*) and after the verb even before a noun subject
  (*Heute gibt ihm der Mann den Ball*);
* **negation**: *nicht* after the definite objects and before places, predicates and the right
  bracket (*hat den Hund nicht gesehen*, *wartet nicht auf den Bus*, *ist nicht müde*); and "must
  not" / "must … no X" forbid, so German says *darf nicht* / *darf kein X* (*muss nicht* would mean
  "need not", which is what "did not have to" becomes: *musste nicht*);
* **sense**: a verb takes only places that suit it (one *lives* somewhere, and *swims* in a lake,
  where nobody else sits or waits; animals stay out of offices and shops), a predicate never
  contradicts the noun's own adjective (no "the blue bed is black"), and the two clauses joined by
  *while* share their tense.

English is the source: it has no cases and almost no endings, so the model must read the
German case and gender off the roles and the nouns, and move the verbs: attention has to reorder.

Splits
------
A sentence goes to train, validation or test by a hash of its German text (and the seed), so no
German sentence of the test set is ever a training target, not even as the translation of a
different English wording ("gives the child a ball" / "gives a ball to the child"). The test set
depends only on ``seed``, ``n_test`` and ``max_words``: it stays the same when ``n_train`` grows.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache

# -- the lexicon ----------------------------------------------------------------------------------
#
# Kinds of nouns (what they can do or have done to them):
#   P person, A animal, T small thing (can be given, carried), B big thing, F food, D drink,
#   R something to read, Y a story (to tell), O something to open, V vehicle, L place you can be in,
#   S landmark (on / under / behind / next to).


@dataclass(frozen=True)
class Noun:
    """A noun in both languages. ``weak`` is the accusative/dative singular of a weak masculine
    noun (der Junge → den Jungen); ``preps`` are the place prepositions it takes ("in", "on", …)."""

    en: str
    en_plural: str  # "" for a mass noun (water, bread): no plural, no "a"
    de: str
    de_plural: str
    gender: str  # "m", "f" or "n"
    kinds: str
    weak: str = ""
    preps: tuple[str, ...] = ()

    @property
    def mass(self) -> bool:
        return not self.en_plural

    def german(self, plural: bool, case: str) -> str:
        """The noun's form in ``case`` ("nom", "acc", "dat", "gen"): dative plurals add -n (den Kindern)
        unless they end in -n or -s (den Frauen, den Autos); weak nouns add -(e)n outside the nominative;
        a masculine or neuter genitive adds -es to one syllable (des Mannes), -s to more (des Lehrers)."""
        if plural:
            dative_n = case == "dat" and not self.de_plural.endswith(("n", "s"))
            return self.de_plural + ("n" if dative_n else "")
        if self.weak and case != "nom":
            return self.weak
        if case == "gen" and self.gender != "f":
            one_syllable = len(re.findall(r"[aeiouäöüy]+", self.de.lower())) == 1
            return self.de + ("es" if one_syllable or self.de.endswith(("s", "ß", "z", "x")) else "s")
        return self.de


def _n(en: str, en_pl: str, de: str, de_pl: str, gender: str, kinds: str, weak: str, preps: str) -> Noun:
    return Noun(en, en_pl, de, de_pl, gender, kinds, weak, tuple(p for p in preps.split("|") if p))


NOUNS: tuple[Noun, ...] = (
    # English, English plural ("": a mass noun), German, German plural, gender, kinds, weak form, places (in|on …)
    # people
    _n("man", "men", "Mann", "Männer", "m", "P", "", ""),
    _n("woman", "women", "Frau", "Frauen", "f", "P", "", ""),
    _n("child", "children", "Kind", "Kinder", "n", "P", "", ""),
    _n("boy", "boys", "Junge", "Jungen", "m", "P", "Jungen", ""),
    _n("girl", "girls", "Mädchen", "Mädchen", "n", "P", "", ""),
    _n("teacher", "teachers", "Lehrer", "Lehrer", "m", "P", "", ""),
    _n("doctor", "doctors", "Arzt", "Ärzte", "m", "P", "", ""),
    _n("student", "students", "Student", "Studenten", "m", "P", "Studenten", ""),
    _n("neighbour", "neighbours", "Nachbar", "Nachbarn", "m", "P", "Nachbarn", ""),
    _n("friend", "friends", "Freund", "Freunde", "m", "P", "", ""),
    _n("father", "fathers", "Vater", "Väter", "m", "P", "", ""),
    _n("mother", "mothers", "Mutter", "Mütter", "f", "P", "", ""),
    _n("brother", "brothers", "Bruder", "Brüder", "m", "P", "", ""),
    _n("sister", "sisters", "Schwester", "Schwestern", "f", "P", "", ""),
    _n("aunt", "aunts", "Tante", "Tanten", "f", "P", "", ""),
    _n("uncle", "uncles", "Onkel", "Onkel", "m", "P", "", ""),
    _n("baker", "bakers", "Bäcker", "Bäcker", "m", "P", "", ""),
    _n("king", "kings", "König", "Könige", "m", "P", "", ""),
    _n("queen", "queens", "Königin", "Königinnen", "f", "P", "", ""),
    _n("farmer", "farmers", "Bauer", "Bauern", "m", "P", "Bauern", ""),
    _n("colleague", "colleagues", "Kollege", "Kollegen", "m", "P", "Kollegen", ""),
    _n("policeman", "policemen", "Polizist", "Polizisten", "m", "P", "Polizisten", ""),
    _n("pilot", "pilots", "Pilot", "Piloten", "m", "P", "Piloten", ""),
    _n("gentleman", "gentlemen", "Herr", "Herren", "m", "P", "Herrn", ""),
    _n("waiter", "waiters", "Kellner", "Kellner", "m", "P", "", ""),
    _n("baby", "babies", "Baby", "Babys", "n", "P", "", ""),
    # animals
    _n("dog", "dogs", "Hund", "Hunde", "m", "A", "", ""),
    _n("cat", "cats", "Katze", "Katzen", "f", "A", "", ""),
    _n("horse", "horses", "Pferd", "Pferde", "n", "A", "", ""),
    _n("bird", "birds", "Vogel", "Vögel", "m", "A", "", ""),
    _n("mouse", "mice", "Maus", "Mäuse", "f", "A", "", ""),
    _n("cow", "cows", "Kuh", "Kühe", "f", "A", "", ""),
    _n("lion", "lions", "Löwe", "Löwen", "m", "A", "Löwen", ""),
    _n("bear", "bears", "Bär", "Bären", "m", "A", "Bären", ""),
    _n("monkey", "monkeys", "Affe", "Affen", "m", "A", "Affen", ""),
    _n("elephant", "elephants", "Elefant", "Elefanten", "m", "A", "Elefanten", ""),
    _n("rabbit", "rabbits", "Kaninchen", "Kaninchen", "n", "A", "", ""),
    _n("pig", "pigs", "Schwein", "Schweine", "n", "A", "", ""),
    _n("duck", "ducks", "Ente", "Enten", "f", "A", "", ""),
    _n("fox", "foxes", "Fuchs", "Füchse", "m", "A", "", ""),
    _n("goat", "goats", "Ziege", "Ziegen", "f", "A", "", ""),
    # small things
    _n("book", "books", "Buch", "Bücher", "n", "TR", "", ""),
    _n("letter", "letters", "Brief", "Briefe", "m", "TRO", "", ""),
    _n("newspaper", "newspapers", "Zeitung", "Zeitungen", "f", "TR", "", ""),
    _n("story", "stories", "Geschichte", "Geschichten", "f", "RY", "", ""),
    _n("map", "maps", "Karte", "Karten", "f", "TR", "", ""),
    _n("ball", "balls", "Ball", "Bälle", "m", "T", "", ""),
    _n("flower", "flowers", "Blume", "Blumen", "f", "T", "", ""),
    _n("key", "keys", "Schlüssel", "Schlüssel", "m", "T", "", ""),
    _n("cup", "cups", "Tasse", "Tassen", "f", "T", "", ""),
    _n("bag", "bags", "Tasche", "Taschen", "f", "TO", "", ""),
    _n("hat", "hats", "Hut", "Hüte", "m", "T", "", ""),
    _n("picture", "pictures", "Bild", "Bilder", "n", "T", "", ""),
    _n("gift", "gifts", "Geschenk", "Geschenke", "n", "T", "", ""),
    _n("phone", "phones", "Handy", "Handys", "n", "T", "", ""),
    _n("umbrella", "umbrellas", "Regenschirm", "Regenschirme", "m", "T", "", ""),
    _n("shirt", "shirts", "Hemd", "Hemden", "n", "T", "", ""),
    _n("shoe", "shoes", "Schuh", "Schuhe", "m", "T", "", ""),
    _n("pen", "pens", "Stift", "Stifte", "m", "T", "", ""),
    _n("bottle", "bottles", "Flasche", "Flaschen", "f", "TO", "", ""),
    _n("glass", "glasses", "Glas", "Gläser", "n", "T", "", ""),
    _n("song", "songs", "Lied", "Lieder", "n", "", "", ""),
    # big things (some are places too)
    _n("car", "cars", "Auto", "Autos", "n", "BLV", "", "in|behind|next to"),
    _n("bicycle", "bicycles", "Fahrrad", "Fahrräder", "n", "BV", "", "next to"),
    _n("clock", "clocks", "Uhr", "Uhren", "f", "B", "", ""),
    _n("computer", "computers", "Computer", "Computer", "m", "B", "", "next to"),
    _n("lamp", "lamps", "Lampe", "Lampen", "f", "B", "", "under|next to"),
    _n("chair", "chairs", "Stuhl", "Stühle", "m", "B", "", "on|under|next to"),
    _n("table", "tables", "Tisch", "Tische", "m", "BS", "", "on|under|next to"),
    _n("bed", "beds", "Bett", "Betten", "n", "BS", "", "on|under|next to"),
    _n("sofa", "sofas", "Sofa", "Sofas", "n", "BS", "", "on|behind|next to"),
    _n("box", "boxes", "Kiste", "Kisten", "f", "BLO", "", "in|on|next to"),
    # food and drink
    _n("apple", "apples", "Apfel", "Äpfel", "m", "TF", "", ""),
    _n("cake", "cakes", "Kuchen", "Kuchen", "m", "TF", "", ""),
    _n("egg", "eggs", "Ei", "Eier", "n", "TF", "", ""),
    _n("banana", "bananas", "Banane", "Bananen", "f", "TF", "", ""),
    _n("bread", "", "Brot", "", "n", "F", "", ""),
    _n("soup", "", "Suppe", "", "f", "F", "", ""),
    _n("rice", "", "Reis", "", "m", "F", "", ""),
    _n("cheese", "", "Käse", "", "m", "F", "", ""),
    _n("meat", "", "Fleisch", "", "n", "F", "", ""),
    _n("chocolate", "", "Schokolade", "", "f", "F", "", ""),
    _n("water", "", "Wasser", "", "n", "D", "", ""),
    _n("coffee", "", "Kaffee", "", "m", "D", "", ""),
    _n("tea", "", "Tee", "", "m", "D", "", ""),
    _n("milk", "", "Milch", "", "f", "D", "", ""),
    _n("juice", "", "Saft", "", "m", "D", "", ""),
    # places and landmarks
    _n("garden", "gardens", "Garten", "Gärten", "m", "L", "", "in|behind"),
    _n("house", "houses", "Haus", "Häuser", "n", "BL", "", "in|behind|next to"),
    _n("park", "parks", "Park", "Parks", "m", "L", "", "in"),
    _n("city", "cities", "Stadt", "Städte", "f", "L", "", "in"),
    _n("kitchen", "kitchens", "Küche", "Küchen", "f", "L", "", "in"),
    _n("room", "rooms", "Zimmer", "Zimmer", "n", "L", "", "in"),
    _n("forest", "forests", "Wald", "Wälder", "m", "L", "", "in"),
    _n("office", "offices", "Büro", "Büros", "n", "L", "", "in"),
    _n("shop", "shops", "Laden", "Läden", "m", "L", "", "in|next to"),
    _n("restaurant", "restaurants", "Restaurant", "Restaurants", "n", "L", "", "in"),
    _n("museum", "museums", "Museum", "Museen", "n", "L", "", "in|next to"),
    _n("library", "libraries", "Bibliothek", "Bibliotheken", "f", "L", "", "in"),
    _n("school", "schools", "Schule", "Schulen", "f", "L", "", "in|behind"),
    _n("lake", "lakes", "See", "Seen", "m", "L", "", "in"),
    _n("tree", "trees", "Baum", "Bäume", "m", "S", "", "under|behind|next to"),
    _n("door", "doors", "Tür", "Türen", "f", "SO", "", "behind|next to"),
    _n("window", "windows", "Fenster", "Fenster", "n", "SO", "", "next to"),
    _n("wall", "walls", "Wand", "Wände", "f", "S", "", "next to"),
    _n("bridge", "bridges", "Brücke", "Brücken", "f", "S", "", "on|under"),
    _n("roof", "roofs", "Dach", "Dächer", "n", "S", "", "on"),
)  # fmt: skip


@dataclass(frozen=True)
class Adjective:
    """An adjective; ``stem`` is the form endings attach to when it is not ``de`` (teuer → teur-e)."""

    en: str
    de: str
    kinds: str  # the kinds of noun it describes (attributive and predicative)
    stem: str = ""

    def german(self, ending: str) -> str:
        """``de`` with an ending; a final -e is not doubled (müde + e → müde, müde + en → müden)."""
        if not ending:
            return self.de
        stem = self.stem or (self.de[:-1] if self.de.endswith("e") else self.de)
        return stem + ending


def _a(en: str, de: str, kinds: str, stem: str) -> Adjective:
    return Adjective(en, de, kinds, stem)


ADJECTIVES: tuple[Adjective, ...] = (
    # English, German, kinds of noun it describes, stem before an ending, when not German minus a final -e
    _a("old", "alt", "PATBL", ""),
    _a("young", "jung", "PA", ""),
    _a("big", "groß", "ATBLS", ""),
    _a("tall", "groß", "P", ""),
    _a("small", "klein", "PATBLS", ""),
    _a("new", "neu", "TBLR", ""),
    _a("tired", "müde", "PA", ""),
    _a("happy", "glücklich", "PA", ""),
    _a("sad", "traurig", "PA", ""),
    _a("hungry", "hungrig", "PA", ""),
    _a("friendly", "freundlich", "PA", ""),
    _a("clever", "klug", "PA", ""),
    _a("rich", "reich", "P", ""),
    _a("poor", "arm", "P", ""),
    _a("strong", "stark", "PA", ""),
    _a("lazy", "faul", "PA", ""),
    _a("brave", "mutig", "P", ""),
    _a("angry", "wütend", "PA", ""),
    _a("nice", "nett", "P", ""),
    _a("quiet", "ruhig", "PAL", ""),
    _a("loud", "laut", "PA", ""),
    _a("ill", "krank", "PA", ""),
    _a("famous", "berühmt", "P", ""),
    _a("beautiful", "schön", "PATBL", ""),
    _a("fast", "schnell", "AV", ""),
    _a("slow", "langsam", "AV", ""),
    _a("fat", "dick", "AR", ""),
    _a("cute", "süß", "A", ""),
    _a("wild", "wild", "A", ""),
    _a("dangerous", "gefährlich", "AL", ""),
    _a("black", "schwarz", "ATB", ""),
    _a("white", "weiß", "ATB", ""),
    _a("brown", "braun", "ATB", ""),
    _a("grey", "grau", "ATB", ""),
    _a("red", "rot", "TB", ""),
    _a("blue", "blau", "TB", ""),
    _a("green", "grün", "TBL", ""),
    _a("yellow", "gelb", "TB", ""),
    _a("expensive", "teuer", "TBF", "teur"),
    _a("cheap", "billig", "TBF", ""),
    _a("heavy", "schwer", "TB", ""),
    _a("dark", "dunkel", "BL", "dunkl"),
    _a("long", "lang", "R", ""),
    _a("short", "kurz", "R", ""),
    _a("interesting", "interessant", "R", ""),
    _a("boring", "langweilig", "R", ""),
    _a("funny", "lustig", "PR", ""),
    _a("empty", "leer", "TBL", ""),
    _a("dirty", "schmutzig", "ATBL", ""),
    _a("clean", "sauber", "TBL", ""),
    _a("cold", "kalt", "FD", ""),
    _a("hot", "heiß", "FD", ""),
    _a("warm", "warm", "FD", ""),
    _a("fresh", "frisch", "FD", ""),
    _a("sweet", "süß", "FD", ""),
    _a("delicious", "lecker", "F", ""),
)  # fmt: skip


@dataclass(frozen=True)
class Determiner:
    """A word before the noun. ``kind`` says how it and the adjective after it decline:

    * ``"def"``: the definite article (der, den, dem …), adjective weak;
    * ``"der"``: a der-word (dies-er, jed-er), adjective weak;
    * ``"ein"``: an ein-word (ein, kein, mein …): no ending in three places, adjective mixed;
    * ``"quant"``: viel-e / einig-e, declined like a strong adjective, adjective strong;
    * ``"num"``: a number, never declined, adjective strong;
    * ``"bare"``: no article at all (plural or mass noun), adjective strong.
    """

    en: str  # English before a singular (or mass) noun; "" when it is not used in the singular
    en_plural: str  # before a plural; "" when not used in the plural
    de: str  # the stem the ending attaches to
    kind: str
    mass: bool = False  # may stand before a mass noun (water, bread)


DETERMINERS: tuple[Determiner, ...] = (
    Determiner("the", "the", "", "def", mass=True),
    Determiner("a", "", "ein", "ein"),
    Determiner("this", "these", "dies", "der", mass=True),
    Determiner("every", "", "jed", "der"),
    Determiner("my", "my", "mein", "ein", mass=True),
    Determiner("his", "his", "sein", "ein", mass=True),
    Determiner("her", "her", "ihr", "ein", mass=True),
    Determiner("our", "our", "unser", "ein", mass=True),
    Determiner("their", "their", "ihr", "ein", mass=True),
    Determiner("no", "no", "kein", "ein", mass=True),
    Determiner("", "many", "viel", "quant"),
    Determiner("", "some", "einig", "quant"),
    Determiner("", "two", "zwei", "num"),
    Determiner("", "three", "drei", "num"),
    Determiner("", "four", "vier", "num"),
    Determiner("", "five", "fünf", "num"),
    Determiner("", "", "", "bare", mass=True),
)
_DET = {(d.en or d.en_plural, d.kind): d for d in DETERMINERS}

# Case endings, by case and by "slot": masculine, feminine, neuter singular, or plural.
SLOTS = ("m", "f", "n", "pl")


def _by_case(nom: str, acc: str, dat: str, gen: str) -> dict[str, dict[str, str]]:
    """A table of forms by case and slot; each case is written as its four forms (m f n pl), "-" for none."""
    forms = {"nom": nom, "acc": acc, "dat": dat, "gen": gen}
    return {case: dict(zip(SLOTS, (w.strip("-") for w in text.split()), strict=True)) for case, text in forms.items()}


ARTICLE = _by_case("der die das die", "den die das die", "dem der dem den", "des der des der")
# der-words (dieser, jeder) and strong adjectives share these endings, except in the genitive
# (dieses Mannes, but kalten Wassers), which only der-words, ein-words and articles take here.
STRONG = _by_case("er e es e", "en e es e", "em er em en", "es er es er")
EIN_WORD = _by_case("- e - e", "en e - e", "em er em en", "es er es er")
WEAK = _by_case("e e e en", "en e e en", "en en en en", "en en en en")
# After an ein-word the adjective shows the gender where the ein-word cannot (ein alt-er Mann).
MIXED = _by_case("er e es en", "en e es en", "en en en en", "en en en en")
RELATIVE = {
    case: {**forms, "pl": "denen" if case == "dat" else forms["pl"]} for case, forms in ARTICLE.items() if case != "gen"
}

# preposition and article fused into one word, as written German does
CONTRACTIONS = {("in", "dem"): "im", ("in", "das"): "ins", ("zu", "dem"): "zum", ("zu", "der"): "zur"}


@dataclass(frozen=True)
class Preposition:
    en: str
    de: str
    case: str


PREPOSITIONS = {
    p.en: p
    for p in (
        Preposition("in", "in", "dat"),  # where: dative
        Preposition("into", "in", "acc"),  # where to: accusative
        Preposition("on", "auf", "dat"),
        Preposition("onto", "auf", "acc"),
        Preposition("under", "unter", "dat"),
        Preposition("behind", "hinter", "dat"),
        Preposition("next to", "neben", "dat"),
        Preposition("out of", "aus", "dat"),
        Preposition("to", "zu", "dat"),
        Preposition("with", "mit", "dat"),
        Preposition("without", "ohne", "acc"),
        Preposition("for", "für", "acc"),
    )
}
MOTION = {"in": "into", "on": "onto"}  # the place preposition → its direction twin


@dataclass(frozen=True)
class Verb:
    """A verb in both languages.

    ``de`` holds the finite present forms for ich, er/sie/es and wir/sie (without a separable
    prefix); ``participle`` includes it. ``frame`` says what the verb takes:
    ``"intr"`` (a place may follow), ``"motion"`` (a direction may follow), ``"acc"``, ``"dat"``
    (a dative object: helfen), ``"ditr"`` (dative person + accusative thing), ``"prep"`` (an object
    behind a preposition: warten auf), ``"pred"`` (sein + adjective or place), ``"say"`` (a dass-clause).
    """

    en: tuple[str, str, str]  # base, third person singular, simple past ("" = no past: read/read)
    de: tuple[str, str, str]
    participle: str
    frame: str
    subjects: str  # kinds of noun that may be the subject
    objects: str = ""  # kinds of noun for the (first) object
    things: str = ""  # ditr: kinds of noun for the thing given
    prefix: str = ""  # separable prefix: an-rufen
    aux: str = "haben"  # the perfect's auxiliary: hat gesehen, ist gelaufen
    preterite: tuple[str, str, str] = ()  # sein and haben use the simple past instead of the perfect
    infinitive: str = ""  # when it is not prefix + the plural form
    to_dative: bool = False  # English may also say "gives a ball to the child"
    obj_prep: tuple[str, str] = ()  # ("auf", "acc"): wartet auf den Bus
    modal_ok: bool = True  # False where a modal sounds odd in English ("can need", "wants to belong to")
    places: tuple[str, ...] = ()  # intr: the only nouns its place may be (English), and then it always has one

    @property
    def german_infinitive(self) -> str:
        return self.infinitive or self.prefix + self.de[2]


def _v(en: str, de: str, participle: str, frame: str, subjects: str, objects: str, more: str) -> Verb:
    """A verb; ``more`` holds the rest: ``key=value`` (a ``|`` makes a tuple) and the flags
    ``to_dative`` and ``no_modal``."""
    options: dict = {}
    for item in more.split():
        key, _, value = item.partition("=")
        if key in ("to_dative", "no_modal"):
            options["to_dative" if key == "to_dative" else "modal_ok"] = key == "to_dative"
        else:
            options[key] = tuple(value.split("|")) if key in ("preterite", "obj_prep", "places") else value
    return Verb(tuple(en.split("|")), tuple(de.split("|")), participle, frame, subjects, objects, **options)


VERBS: tuple[Verb, ...] = (
    # English (base|3rd person|past), German (ich|er|wir), participle, frame, subjects, objects, more
    # intransitive, with an optional place
    _v("sleep|sleeps|slept", "schlafe|schläft|schlafen", "geschlafen", "intr", "PA", "", ""),
    _v("sit|sits|sat", "sitze|sitzt|sitzen", "gesessen", "intr", "PA", "", ""),
    _v("wait|waits|waited", "warte|wartet|warten", "gewartet", "intr", "PA", "", ""),
    _v("play|plays|played", "spiele|spielt|spielen", "gespielt", "intr", "PA", "", ""),
    _v("work|works|worked", "arbeite|arbeitet|arbeiten", "gearbeitet", "intr", "P", "", ""),
    _v("live|lives|lived", "wohne|wohnt|wohnen", "gewohnt", "intr", "P", "", "places=house|city|forest"),
    _v("sing|sings|sang", "singe|singt|singen", "gesungen", "intr", "P", "", ""),
    _v("dance|dances|danced", "tanze|tanzt|tanzen", "getanzt", "intr", "P", "", ""),
    _v("laugh|laughs|laughed", "lache|lacht|lachen", "gelacht", "intr", "P", "", ""),
    _v("swim|swims|swam", "schwimme|schwimmt|schwimmen", "geschwommen", "intr", "PA", "", "aux=sein places=lake"),
    # motion, with an optional direction; the perfect takes "sein"
    _v("run|runs|ran", "laufe|läuft|laufen", "gelaufen", "motion", "PA", "", "aux=sein"),
    _v("go|goes|went", "gehe|geht|gehen", "gegangen", "motion", "PA", "", "aux=sein"),
    _v("jump|jumps|jumped", "springe|springt|springen", "gesprungen", "motion", "PA", "", "aux=sein"),
    _v("drive|drives|drove", "fahre|fährt|fahren", "gefahren", "motion", "P", "", "aux=sein"),
    _v("come|comes|came", "komme|kommt|kommen", "gekommen", "motion", "PA", "", "aux=sein"),
    _v("climb|climbs|climbed", "klettere|klettert|klettern", "geklettert", "motion", "PA", "", "aux=sein"),
    # accusative object
    _v("see|sees|saw", "sehe|sieht|sehen", "gesehen", "acc", "PA", "PATBL", ""),
    _v("buy|buys|bought", "kaufe|kauft|kaufen", "gekauft", "acc", "P", "ATBFD", ""),
    _v("find|finds|found", "finde|findet|finden", "gefunden", "acc", "PA", "PATF", ""),
    _v("read|reads|", "lese|liest|lesen", "gelesen", "acc", "P", "R", ""),
    _v("need|needs|needed", "brauche|braucht|brauchen", "gebraucht", "acc", "PA", "TBFD", "no_modal"),
    _v("love|loves|loved", "liebe|liebt|lieben", "geliebt", "acc", "P", "PA", ""),
    _v("visit|visits|visited", "besuche|besucht|besuchen", "besucht", "acc", "P", "PL", ""),
    _v("call|calls|called", "rufe|ruft|rufen", "angerufen", "acc", "P", "P", "prefix=an"),
    _v("invite|invites|invited", "lade|lädt|laden", "eingeladen", "acc", "P", "P", "prefix=ein"),
    _v("pick up|picks up|picked up", "hole|holt|holen", "abgeholt", "acc", "P", "PAT", "prefix=ab"),
    _v("look at|looks at|looked at", "schaue|schaut|schauen", "angeschaut", "acc", "PA", "PATBR", "prefix=an"),
    _v("eat|eats|ate", "esse|isst|essen", "gegessen", "acc", "P", "F", ""),
    _v("eat|eats|ate", "fresse|frisst|fressen", "gefressen", "acc", "A", "F", ""),
    _v("drink|drinks|drank", "trinke|trinkt|trinken", "getrunken", "acc", "PA", "D", ""),
    _v("wash|washes|washed", "wasche|wäscht|waschen", "gewaschen", "acc", "P", "ATB", ""),
    _v("catch|catches|caught", "fange|fängt|fangen", "gefangen", "acc", "PA", "A", ""),
    _v("carry|carries|carried", "trage|trägt|tragen", "getragen", "acc", "P", "T", ""),
    _v("sell|sells|sold", "verkaufe|verkauft|verkaufen", "verkauft", "acc", "P", "ATBF", ""),
    _v("forget|forgets|forgot", "vergesse|vergisst|vergessen", "vergessen", "acc", "P", "T", ""),
    _v("hear|hears|heard", "höre|hört|hören", "gehört", "acc", "PA", "PA", ""),
    _v("ask|asks|asked", "frage|fragt|fragen", "gefragt", "acc", "P", "P", ""),
    _v("have|has|had", "habe|hat|haben", "", "acc", "P", "ATB", "preterite=hatte|hatte|hatten"),
    _v("cook|cooks|cooked", "koche|kocht|kochen", "gekocht", "acc", "P", "FD", ""),
    _v("write|writes|wrote", "schreibe|schreibt|schreiben", "geschrieben", "acc", "P", "R", ""),
    _v("paint|paints|painted", "male|malt|malen", "gemalt", "acc", "P", "PATB", ""),
    _v("open|opens|opened", "öffne|öffnet|öffnen", "geöffnet", "acc", "P", "O", ""),
    _v("take|takes|took", "nehme|nimmt|nehmen", "genommen", "acc", "P", "TF", ""),
    _v("build|builds|built", "baue|baut|bauen", "gebaut", "acc", "P", "B", ""),
    _v("repair|repairs|repaired", "repariere|repariert|reparieren", "repariert", "acc", "P", "B", ""),
    _v("look for|looks for|looked for", "suche|sucht|suchen", "gesucht", "acc", "PA", "PAT", ""),
    _v("meet|meets|met", "treffe|trifft|treffen", "getroffen", "acc", "P", "P", ""),
    _v("know|knows|knew", "kenne|kennt|kennen", "gekannt", "acc", "P", "PA", "no_modal"),
    _v("feed|feeds|fed", "füttere|füttert|füttern", "gefüttert", "acc", "P", "A", ""),
    _v("clean|cleans|cleaned", "putze|putzt|putzen", "geputzt", "acc", "P", "TBL", ""),
    _v("bake|bakes|baked", "backe|backt|backen", "gebacken", "acc", "P", "F", ""),
    # dative object
    _v("help|helps|helped", "helfe|hilft|helfen", "geholfen", "dat", "PA", "PA", ""),
    _v("thank|thanks|thanked", "danke|dankt|danken", "gedankt", "dat", "P", "P", ""),
    _v("follow|follows|followed", "folge|folgt|folgen", "gefolgt", "dat", "PA", "PA", "aux=sein"),
    _v("answer|answers|answered", "antworte|antwortet|antworten", "geantwortet", "dat", "P", "P", ""),
    _v("trust|trusts|trusted", "vertraue|vertraut|vertrauen", "vertraut", "dat", "PA", "PA", ""),
    _v("listen to|listens to|listened to", "höre|hört|hören", "zugehört", "dat", "PA", "P", "prefix=zu"),
    _v("belong to|belongs to|belonged to", "gehöre|gehört|gehören", "gehört", "dat", "ATB", "P", "no_modal"),
    # dative person and accusative thing
    _v("give|gives|gave", "gebe|gibt|geben", "gegeben", "ditr", "P", "PA", "things=TFD to_dative"),
    _v("show|shows|showed", "zeige|zeigt|zeigen", "gezeigt", "ditr", "P", "P", "things=TRB to_dative"),
    _v("send|sends|sent", "schicke|schickt|schicken", "geschickt", "ditr", "P", "P", "things=T to_dative"),
    _v("bring|brings|brought", "bringe|bringt|bringen", "gebracht", "ditr", "P", "PA", "things=TFD to_dative"),
    _v("buy|buys|bought", "kaufe|kauft|kaufen", "gekauft", "ditr", "P", "P", "things=TB"),
    _v("sell|sells|sold", "verkaufe|verkauft|verkaufen", "verkauft", "ditr", "P", "P", "things=TB to_dative"),
    _v("tell|tells|told", "erzähle|erzählt|erzählen", "erzählt", "ditr", "P", "P", "things=Y"),
    _v("read|reads|", "lese|liest|lesen", "vorgelesen", "ditr", "P", "P", "things=R prefix=vor"),
    # an object behind a preposition
    _v("wait for|waits for|waited for", "warte|wartet|warten", "gewartet", "prep", "PA", "PA", "obj_prep=auf|acc"),
    _v("talk to|talks to|talked to", "spreche|spricht|sprechen", "gesprochen", "prep", "P", "P", "obj_prep=mit|dat"),
    # sein + adjective or place
    _v("be|is|was", "bin|ist|sind", "", "pred", "PATBL", "", "preterite=war|war|waren infinitive=sein"),
    # a dass-clause follows
    _v("say|says|said", "sage|sagt|sagen", "gesagt", "say", "P", "", ""),
    _v("know|knows|knew", "weiß|weiß|wissen", "gewusst", "say", "P", "", ""),
    _v("believe|believes|believed", "glaube|glaubt|glauben", "geglaubt", "say", "P", "", ""),
    _v("think|thinks|thought", "denke|denkt|denken", "gedacht", "say", "P", "", ""),
    _v("hope|hopes|hoped", "hoffe|hofft|hoffen", "gehofft", "say", "P", "", ""),
)  # fmt: skip


@dataclass(frozen=True)
class Modal:
    """A modal verb: the German one sends the main verb's infinitive to the end (will … sehen)."""

    en: tuple[str, str, str]  # present, by person: I / he / we
    en_base: str  # after "do" in a question ("want to"), or "" when English inverts the modal itself
    en_past: str  # "" when there is no past here
    de: tuple[str, str, str]
    de_past: tuple[str, str, str] = ()
    de_negative: tuple[tuple[str, str, str], tuple[str, str, str]] = ()  # (present, past) with "no X"


MODALS: tuple[Modal, ...] = (
    Modal(("can", "can", "can"), "", "", ("kann", "kann", "können")),
    # "must … no X" forbids: German says "darf kein X" ("muss kein X" would mean "need not")
    Modal(("must", "must", "must"), "", "had to", ("muss", "muss", "müssen"), ("musste", "musste", "mussten"),
          (("darf", "darf", "dürfen"), ("durfte", "durfte", "durften"))),
    Modal(("want to", "wants to", "want to"), "want to", "wanted to", ("will", "will", "wollen"), ("wollte", "wollte", "wollten")),
    Modal(("would like to",) * 3, "", "", ("möchte", "möchte", "möchten")),
)  # fmt: skip
_EN_PAST_BASE = {"had to": "have to", "wanted to": "want to"}


@dataclass(frozen=True)
class Pronoun:
    en: str
    de: str
    person: str  # "1sg", "3sg" or "pl": which verb form agrees with it


PRONOUNS: tuple[Pronoun, ...] = (
    Pronoun("I", "ich", "1sg"),
    Pronoun("he", "er", "3sg"),
    Pronoun("she", "sie", "3sg"),
    Pronoun("we", "wir", "pl"),
    Pronoun("they", "sie", "pl"),
)
PERSON_INDEX = {"1sg": 0, "3sg": 1, "pl": 2}


@dataclass(frozen=True)
class ObjectPronoun:
    """A person as an object: "him" → *ihn* (accusative) / *ihm* (dative). Only pronouns whose German
    form the English fixes: "it" could be *ihn*, *sie* or *es* (the gender of a noun that is not
    in the sentence), and "her" would be read as the possessive before a noun."""

    en: str
    acc: str
    dat: str
    subjects: tuple[str, ...] = ()  # subject pronouns it is not used with ("I see me", "we follow me")


OBJECT_PRONOUNS: tuple[ObjectPronoun, ...] = (
    ObjectPronoun("me", "mich", "mir", ("I", "we")),
    ObjectPronoun("him", "ihn", "ihm"),
    ObjectPronoun("us", "uns", "uns", ("I", "we")),
    ObjectPronoun("them", "sie", "ihnen"),
)

CONJUNCTIONS = {"because": "weil", "although": "obwohl", "while": "während", "if": "wenn"}
ADVERBS = {"today": ("heute", "present"), "now": ("jetzt", "present"), "sometimes": ("manchmal", "present"),
           "yesterday": ("gestern", "past"), "tomorrow": ("morgen", "modal")}  # fmt: skip

# -- phrases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NounPhrase:
    """Determiner, optional adjective, noun; singular or plural. Optionally a relative clause."""

    det: Determiner
    noun: Noun
    plural: bool = False
    adj: Adjective | None = None
    relative: Clause | None = None  # a clause with one gap, which this noun fills
    owner: NounPhrase | None = None  # "the man's dog": der Hund *des Mannes* (the head takes "the")

    @property
    def person(self) -> str:
        return "pl" if self.plural else "3sg"

    @property
    def slot(self) -> str:
        return "pl" if self.plural else self.noun.gender


def german_np(np: NounPhrase, case: str) -> list[str]:
    """``np`` in ``case``: determiner, adjective and noun, each with its ending.

    "a old man" in the nominative → ``['ein', 'alter', 'Mann']``, in the dative →
    ``['einem', 'alten', 'Mann']``; "- cold water" (no article) in the dative → ``['kaltem', 'Wasser']``.
    """
    slot, kind = np.slot, np.det.kind
    if kind == "def":
        words, adjective = [ARTICLE[case][slot]], WEAK
    elif kind == "der":
        words, adjective = [np.det.de + STRONG[case][slot]], WEAK
    elif kind == "ein":
        words, adjective = [np.det.de + EIN_WORD[case][slot]], MIXED
    elif kind == "quant":
        words, adjective = [np.det.de + STRONG[case][slot]], STRONG
    else:  # a number or nothing: the adjective alone shows the case
        words, adjective = [np.det.de] if np.det.de else [], STRONG
    if np.adj is not None:
        words.append(np.adj.german(adjective[case][slot]))
    words.append(np.noun.german(np.plural, case))
    if np.owner is not None:  # the genitive follows its noun
        words += german_np(np.owner, "gen")
    if np.relative is not None:
        words += [",", *german_relative(np), ","]
    return words


def english_np(np: NounPhrase) -> list[str]:
    """``np`` in English: "a"/"an" by the next word's first letter."""
    det = np.det.en_plural if np.plural else np.det.en
    words = [np.adj.en] if np.adj is not None else []
    words.append(np.noun.en_plural if np.plural else np.noun.en)
    if det == "a" and words[0][0] in "aeiou":
        det = "an"
    if np.owner is not None:  # the owner replaces the article: "the men's dog", "the boys' dog"
        owner = english_np(np.owner)
        return [*owner[:-1], owner[-1] + ("'" if owner[-1].endswith("s") else "'s"), *words, *_relative_en(np)]
    return ([det] if det else []) + words + _relative_en(np)


def _relative_en(np: NounPhrase) -> list[str]:
    return english_relative(np) if np.relative is not None else []


@dataclass(frozen=True)
class PrepPhrase:
    prep: Preposition
    np: NounPhrase


def german_pp(pp: PrepPhrase) -> list[str]:
    words = german_np(pp.np, pp.prep.case)
    fused = CONTRACTIONS.get((pp.prep.de, words[0])) if pp.np.det.kind == "def" else None
    return [fused, *words[1:]] if fused else [pp.prep.de, *words]


def english_pp(pp: PrepPhrase) -> list[str]:
    return [*pp.prep.en.split(), *english_np(pp.np)]


# -- clauses ---------------------------------------------------------------------------------------

Subject = NounPhrase | Pronoun


@dataclass(frozen=True)
class Clause:
    """One verb with its subject, objects and adverbials.

    ``subject`` is None in a relative clause whose gap is the subject (the relative pronoun
    stands there); ``gap`` names the relativised role ("subject", "acc", "dat") or is "".
    ``tense`` is "present" or "past"; ``modal`` adds a modal verb.
    """

    verb: Verb
    subject: Subject | None
    person: str
    tense: str = "present"
    modal: Modal | None = None
    dat: NounPhrase | ObjectPronoun | None = None
    acc: NounPhrase | ObjectPronoun | None = None
    pred: Adjective | None = None
    place: PrepPhrase | None = None
    company: PrepPhrase | None = None  # with / without / for
    to_dative: bool = False  # English "gives a ball to the child"
    gap: str = ""
    complement: tuple[str, Clause] | None = None  # ("that", clause) after say / know / believe …
    negated: bool = False  # "does not see the dog": sieht den Hund *nicht*


@dataclass
class GermanParts:
    """A German clause cut into the fields of the sentence bracket."""

    subject: list[str]
    finite: str  # the verb that moves: second, first or last
    middle: list[str]  # objects and adverbials (object pronouns apart, in ``pronouns``)
    right: list[str]  # what stays at the end of a main clause (prefix, participle, infinitive)
    final: list[str]  # the verbs at the end of a subordinate clause, finite last
    after: list[str] = field(default_factory=list)  # a dass-clause, behind everything
    pronouns: list[str] = field(default_factory=list)  # object pronouns: early in the middle field
    pronoun_subject: bool = False

    def after_finite(self) -> list[str]:
        """Subject and object pronouns where they follow the verb (a question, a fronted adverb) or
        the conjunction: pronouns come early, before a noun subject (*Heute gibt ihm der Mann …*)."""
        if self.pronoun_subject:
            return [*self.subject, *self.pronouns]
        # but "sie" (them) stays behind: "sucht sie das Pferd" would read as "she looks for the horse"
        early = [p for p in self.pronouns if p != "sie"]
        return [*early, *self.subject, *[p for p in self.pronouns if p == "sie"]]


def german_subject(subject: Subject | None) -> list[str]:
    if subject is None:
        return []
    return [subject.de] if isinstance(subject, Pronoun) else german_np(subject, "nom")


def german_parts(c: Clause) -> GermanParts:
    """Cut ``c`` into subject, finite verb, middle field, right bracket (see :class:`GermanParts`)."""
    v, i = c.verb, PERSON_INDEX[c.person]
    middle: list[str] = []
    pronouns = [c.acc.acc] if isinstance(c.acc, ObjectPronoun) else []  # the accusative before the dative
    pronouns += [c.dat.dat] if isinstance(c.dat, ObjectPronoun) else []
    if isinstance(c.dat, NounPhrase) and not v.obj_prep:
        middle += german_np(c.dat, "dat")
    if isinstance(c.acc, NounPhrase):
        middle += german_np(c.acc, "acc")
    if c.negated:  # after the (definite) objects, before everything else: sieht den Hund nicht im Park
        middle.append("nicht")
    if c.dat is not None and v.obj_prep:  # wartet (nicht) auf den Bus
        middle += german_pp(PrepPhrase(_OBJ_PREP[v.obj_prep], c.dat))
    if c.company is not None:  # "mit dem Hund" before the place: manner before place
        middle += german_pp(c.company)
    if c.place is not None:
        middle += german_pp(c.place)
    if c.pred is not None:
        middle.append(c.pred.de)  # a predicative adjective takes no ending
    if c.modal is not None:
        forms = c.modal.de_past if c.tense == "past" else c.modal.de
        if c.modal.de_negative and (has_no(c) or c.negated and c.tense == "present"):  # must not: darf nicht
            forms = c.modal.de_negative[c.tense == "past"]
        finite, right = forms[i], [v.german_infinitive]
    elif c.tense == "past" and v.preterite:
        finite, right = v.preterite[i], []
    elif c.tense == "past":
        finite, right = _AUX[v.aux][i], [v.participle]
    else:
        finite, right = v.de[i], [v.prefix] if v.prefix else []
    if c.modal is None and c.tense == "present" and v.prefix:
        final = [v.prefix + finite]  # the separable prefix joins its verb again: ..., weil sie ihn anruft
    else:
        final = [*right, finite]
    after = []
    if c.complement is not None:
        after = [",", *german_subordinate(c.complement[1], _THAT[c.complement[0]])]
    subject = german_subject(c.subject)
    return GermanParts(subject, finite, middle, right, final, after, pronouns, isinstance(c.subject, Pronoun))


def can_be_past(c: Clause) -> bool:
    """Whether ``c`` can be told in the past: "read" has no distinct English past here, and
    "can" / "would like to" none at all."""
    return c.verb.frame != "say" and (c.verb.en[2] != "" if c.modal is None else c.modal.en_past != "")


def same_tense(main: Clause, sub: Clause) -> tuple[Clause, Clause]:
    """``main`` and ``sub`` in one tense: the main clause's, or the present where ``sub`` has no past."""
    if main.tense == "past" and can_be_past(sub):
        return main, replace(sub, tense="past")
    return replace(main, tense="present"), replace(sub, tense="present")


# Objects that "nicht" can follow: definite ones. An indefinite one is negated with "kein" instead
# ("does not see a dog" → "sieht keinen Hund"), and "nicht jeden Hund" would move "nicht": left out.
_DEFINITE = ("the", "this", "these", "my", "his", "her", "our", "their")


def can_negate(c: Clause) -> bool:
    """Whether ``c`` may be negated with *nicht*: every object (if any) is definite, and the subject
    is not "every …" ("every friend does not …" reads as "not every friend …")."""
    objects = [np for np in (c.dat, c.acc) if isinstance(np, NounPhrase)]  # a pronoun is definite
    every = isinstance(c.subject, NounPhrase) and c.subject.det.en == "every"
    return not every and all((np.det.en_plural if np.plural else np.det.en) in _DEFINITE for np in objects)


def has_no(c: Clause) -> bool:
    """Whether an object of ``c`` is negated with "no" (kein): "must trust no woman"."""
    return any(isinstance(np, NounPhrase) and np.det.en == "no" for np in (c.dat, c.acc))


_AUX = {"haben": ("habe", "hat", "haben"), "sein": ("bin", "ist", "sind")}
_THAT = {"that": "dass"}
_OBJ_PREP = {("auf", "acc"): Preposition("for", "auf", "acc"), ("mit", "dat"): Preposition("to", "mit", "dat")}


def german_main(c: Clause, front: Sequence[str] = ()) -> list[str]:
    """Verb second: the first field (``front``, or the subject), then the finite verb."""
    p = german_parts(c)
    if front:
        return [*front, p.finite, *p.after_finite(), *p.middle, *p.right, *p.after]
    return [*p.subject, p.finite, *p.pronouns, *p.middle, *p.right, *p.after]


def german_question(c: Clause) -> list[str]:
    """Verb first: a yes/no question."""
    p = german_parts(c)
    return [p.finite, *p.after_finite(), *p.middle, *p.right, *p.after]


def german_subordinate(c: Clause, front: str) -> list[str]:
    """Verb last: a conjunction (or relative pronoun), the subject, the middle field, the verbs."""
    p = german_parts(c)
    return [front, *p.after_finite(), *p.middle, *p.final, *p.after]


def german_relative(head: NounPhrase) -> list[str]:
    """The relative clause of ``head``: the pronoun agrees with the head in gender and number and
    takes the case of its role in the clause (der Mann, *dem* das Buch gehört)."""
    c = head.relative
    case = {"subject": "nom", "acc": "acc", "dat": "dat"}[c.gap]
    return german_subordinate(c, RELATIVE[case][head.slot])


def english_subject(subject: Subject | None) -> list[str]:
    if subject is None:
        return []
    return [subject.en] if isinstance(subject, Pronoun) else english_np(subject)


def _english_rest(c: Clause) -> list[str]:
    """Objects and adverbials after the English verb."""
    rest: list[str] = []
    if c.to_dative:
        rest += english_object(c.acc) + ["to"] + english_object(c.dat)
    else:
        rest += english_object(c.dat) + english_object(c.acc)
    if c.pred is not None:
        rest.append(c.pred.en)
    if c.place is not None:
        rest += english_pp(c.place)
    if c.company is not None:  # English puts the place first: "runs into the park with the dog"
        rest += english_pp(c.company)
    if c.complement is not None:
        rest += [c.complement[0], *english_clause(c.complement[1])]
    return rest


def english_object(x: NounPhrase | ObjectPronoun | None) -> list[str]:
    if x is None:
        return []
    return [x.en] if isinstance(x, ObjectPronoun) else english_np(x)


def _english_be(person: str, tense: str) -> str:
    if tense == "past":
        return "were" if person == "pl" else "was"
    return {"1sg": "am", "3sg": "is", "pl": "are"}[person]


def _english_verb(c: Clause) -> list[str]:
    """The English verb group of a statement: "sees", "saw", "wants to see", "is"."""
    v, third = c.verb, c.person == "3sg"
    if c.negated:
        return _english_negated_verb(c)
    if c.modal is not None:
        modal = c.modal.en_past if c.tense == "past" else c.modal.en[PERSON_INDEX[c.person]]
        return [*modal.split(), v.en[0]]
    if v.frame == "pred":
        return [_english_be(c.person, c.tense)]
    form = v.en[2] if c.tense == "past" else v.en[1] if third else v.en[0]
    return form.split()


def _english_negated_verb(c: Clause) -> list[str]:
    """ "does not see", "did not see", "cannot see", "must not see", "did not have to see", "is not"."""
    v, do = c.verb, "did" if c.tense == "past" else "does" if c.person == "3sg" else "do"
    if c.modal is not None:
        if c.tense == "past":  # had to → did not have to (German: musste nicht, "need not")
            return [do, "not", *_EN_PAST_BASE[c.modal.en_past].split(), v.en[0]]
        if c.modal.en_base:  # want to → does not want to
            return [do, "not", *c.modal.en_base.split(), v.en[0]]
        first, *others = c.modal.en[PERSON_INDEX[c.person]].split()  # can / must / would … like to
        return ["cannot" if first == "can" else first, *([] if first == "can" else ["not"]), *others, v.en[0]]
    if v.frame == "pred":
        return [_english_be(c.person, c.tense), "not"]
    return [do, "not", *v.en[0].split()]


def english_clause(c: Clause) -> list[str]:
    """A statement: subject, verb, objects, adverbials (English keeps this order everywhere)."""
    return [*english_subject(c.subject), *_english_verb(c), *_english_rest(c)]


def english_question(c: Clause) -> list[str]:
    """A yes/no question: "Is …", "Can …", or "Does/Did …" with the verb's base form."""
    v, subject, rest = c.verb, english_subject(c.subject), _english_rest(c)
    do = "did" if c.tense == "past" else "does" if c.person == "3sg" else "do"
    if c.modal is not None:
        if c.tense == "past":  # had to → did … have to
            return [do, *subject, *_EN_PAST_BASE[c.modal.en_past].split(), v.en[0], *rest]
        if c.modal.en_base:  # want to → does … want to
            return [do, *subject, *c.modal.en_base.split(), v.en[0], *rest]
        first, *others = c.modal.en[0].split()  # can / must / would … like to
        return [first, *subject, *others, v.en[0], *rest]
    if v.frame == "pred":
        return [_english_be(c.person, c.tense), *subject, *rest]
    return [do, *subject, *v.en[0].split(), *rest]


def english_relative(head: NounPhrase) -> list[str]:
    """ "who" for a person as subject, "that" otherwise; the English gap stays empty."""
    c = head.relative
    pronoun = "who" if c.gap == "subject" and "P" in head.noun.kinds else "that"
    return [pronoun, *english_clause(c)]


# -- text ------------------------------------------------------------------------------------------

_PUNCT_SPACE = re.compile(r" ([,.?!])")
_WORDS = re.compile(r"\w+|[^\w\s]")


def join_words(words: Sequence[str], end: str = ".") -> str:
    """Words → a written sentence: capital first letter, no space before punctuation."""
    text = _PUNCT_SPACE.sub(r"\1", " ".join([*words, end]))
    return text[0].upper() + text[1:]


def sentence_tokens(text: str) -> list[str]:
    """Split a sentence into words and punctuation marks, keeping case (German nouns are capitalised).

    >>> sentence_tokens("Weil der Hund schläft, ist er müde.")
    ['Weil', 'der', 'Hund', 'schläft', ',', 'ist', 'er', 'müde', '.']
    """
    return _WORDS.findall(text)


def detokenize(tokens: Sequence[str]) -> str:
    """The inverse of :func:`sentence_tokens` for the sentences of this task."""
    return _PUNCT_SPACE.sub(r"\1", " ".join(tokens))


def word_count(text: str) -> int:
    """Words, punctuation not counted."""
    return sum(1 for t in sentence_tokens(text) if t[0].isalnum())


# -- random sentences ------------------------------------------------------------------------------


class SentenceMaker:
    """Draws random clauses and sentences from the lexicon with one ``random.Random``.

    The probabilities below keep most sentences between 5 and 12 words, and let every rule
    appear often enough to be learned from some tens of thousands of examples.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def noun(self, kinds: str) -> Noun:
        return self.rng.choice(_nouns_of(kinds))

    def noun_phrase(
        self, kinds: str, plural_p: float = 0.25, adj_p: float = 0.35, skip: tuple[str, ...] = ()
    ) -> NounPhrase:
        """A random noun of one of ``kinds``; determiners whose English is in ``skip`` are not used."""
        noun = self.noun(kinds)
        plural = not noun.mass and self.chance(plural_p)
        if self.chance(0.5 if noun.mass else 0.55):
            det = _DET["the", "def"]
        else:
            det = self.rng.choice(_determiners("mass" if noun.mass else "pl" if plural else "sg", skip))
        adjectives = _adjectives_for(noun.kinds)
        adj = self.rng.choice(adjectives) if adjectives and self.chance(adj_p) else None
        if "P" not in noun.kinds and not noun.mass and self.chance(0.06):  # "the man's dog": des Mannes
            return NounPhrase(_DET["the", "def"], noun, plural, adj, owner=self.owner())
        return NounPhrase(det, noun, plural, adj)

    def owner(self) -> NounPhrase:
        """Whose: a person with "the", "this" or a possessive (their genitives are unambiguous)."""
        noun = self.noun("P")
        plural = self.chance(0.2)
        det = self.rng.choice([_DET[key] for key in _OWNER_DETS])
        adjectives = _adjectives_for(noun.kinds)
        return NounPhrase(det, noun, plural, self.rng.choice(adjectives) if self.chance(0.15) else None)

    def object(self, kinds: str, subject: Subject | None, pronoun_ok: bool = True) -> NounPhrase | ObjectPronoun:
        """An object of one of ``kinds``; a person is sometimes a pronoun ("sees him": *sieht ihn*)."""
        if pronoun_ok and "P" in kinds and self.chance(0.12):
            said = subject.en if isinstance(subject, Pronoun) else ""
            return self.rng.choice([p for p in OBJECT_PRONOUNS if said not in p.subjects])
        return self.noun_phrase(kinds)

    def subject(self, kinds: str) -> Subject:
        if "P" in kinds and self.chance(0.2):
            return self.rng.choice(PRONOUNS)
        return self.noun_phrase(kinds, skip=("no",))  # "No dog sleeps." is grammatical but rare

    def place(self, motion: bool, nouns: tuple[str, ...] = (), kinds: str = "P") -> PrepPhrase:
        """Where (``motion`` False) or where to, for a subject of ``kinds``; ``nouns`` (English)
        limits the place to those. Nobody waits or sleeps *in* a lake, and animals stay out of
        offices, shops and libraries."""
        if motion and self.chance(0.2):  # to a person: zum Arzt, zur Mutter
            return PrepPhrase(PREPOSITIONS["to"], self.noun_phrase("P", plural_p=0.15, adj_p=0.2, skip=_ODD))
        if not nouns:
            nouns = _places(motion, animal="P" not in kinds)
        noun = self.rng.choice(_nouns_named(nouns))
        preps = [p for p in noun.preps if not motion or p in MOTION]
        if not preps:
            return self.place(motion, nouns, kinds)
        prep = self.rng.choice(preps)
        if motion:
            prep = "out of" if prep == "in" and self.chance(0.25) else MOTION[prep]
        return PrepPhrase(PREPOSITIONS[prep], self._place_np(noun))

    def _place_np(self, noun: Noun) -> NounPhrase:
        det = _DET["the", "def"] if self.chance(0.7) else _DET[self.rng.choice(_PLACE_DETS)]
        adjectives = _adjectives_for(noun.kinds)
        adj = self.rng.choice(adjectives) if adjectives and self.chance(0.3) else None
        return NounPhrase(det, noun, False, adj)

    def tense_and_modal(self) -> tuple[str, Modal | None]:
        """A quarter with a modal verb, the rest split between present and past."""
        r = self.rng.random()
        if r < 0.25:
            modal = self.rng.choice(MODALS)
            tense = "past" if modal.en_past and self.chance(0.3) else "present"
            return tense, modal
        return ("past" if r < 0.55 else "present"), None

    def clause(
        self, gap: str = "", head: NounPhrase | None = None, frames: str = "", subject: NounPhrase | None = None
    ) -> Clause:
        """A random clause. With ``gap``, ``head`` fills the gapped role (a relative clause);
        ``subject`` fixes the subject (the verb is then one that suits it)."""
        verb = self._verb(gap, head, frames, subject)
        tense, modal = self.tense_and_modal()
        if verb.frame == "say":
            tense, modal = "present", None  # keeps English free of the sequence of tenses
        if tense == "past" and not verb.en[2] and modal is None:
            tense = "present"  # "read" is spelled the same in present and past
        if gap == "subject":
            subject, person = None, head.person
        else:
            subject = subject or self.subject(verb.subjects)
            person = subject.person
        if modal is not None and (not verb.modal_ok or not set(self._kinds_of(subject, head)) & set("PA")):
            tense, modal = "present", None  # "the room wants to be empty", "can need": odd, left out
        c = Clause(verb, subject, person, tense, modal, gap=gap)
        return self._complete(c, head)

    def _verb(self, gap: str, head: NounPhrase | None, frames: str, subject: NounPhrase | None) -> Verb:
        if gap == "subject" or subject is not None:  # a verb this noun can be the subject of
            return self.rng.choice(_verbs_for_subject((head or subject).noun.kinds, frames or _ALL_FRAMES))
        if gap:  # a verb whose object this noun can be
            return self.rng.choice(_verbs_for_object(gap, head.noun.kinds))
        weights = _FRAME_WEIGHTS if not frames else dict.fromkeys(frames.split(","), 1)
        frame = self.rng.choices(list(weights), weights=list(weights.values()))[0]
        return self.rng.choice(_verbs_for_subject("PATBL", frame))

    @staticmethod
    def _kinds_of(subject: Subject | None, head: NounPhrase | None) -> str:
        if subject is None:  # the gap of a relative clause: the head is the subject
            return head.noun.kinds
        return "P" if isinstance(subject, Pronoun) else subject.noun.kinds

    def _complete(self, c: Clause, head: NounPhrase | None) -> Clause:
        v, kinds = c.verb, self._kinds_of(c.subject, head)
        if v.frame in ("acc", "ditr") and c.gap != "acc":
            kinds_acc = v.things if v.frame == "ditr" else v.objects
            c = replace(c, acc=self.object(kinds_acc, c.subject))
        if v.frame in ("dat", "ditr", "prep") and c.gap != "dat":
            c = replace(c, dat=self.object(v.objects, c.subject, pronoun_ok=v.frame != "prep"))
        if v.frame == "ditr" and v.to_dative:
            c = replace(c, to_dative=self.chance(0.35))
        if v.frame == "pred":
            c = self._predicate(c, kinds, head)
        if v.frame == "say":
            c = replace(c, complement=("that", self.clause(frames="intr,motion,acc,dat,pred")))
        if v.places:  # to live is to live somewhere; one swims in a lake, not in a restaurant
            c = replace(c, place=self.place(motion=False, nouns=v.places, kinds=kinds))
        elif v.frame == "motion" or v.frame == "intr" and self.chance(0.75):
            c = replace(c, place=self.place(motion=v.frame == "motion", kinds=kinds))
        elif v.frame == "acc" and "P" in kinds and self.chance(0.15):
            c = replace(c, place=self.place(motion=False, kinds=kinds))
        if v.frame in ("intr", "motion") and self.chance(0.2):
            prep = "with" if self.chance(0.7) else "without"
            np = self.noun_phrase("PA", plural_p=0.2, adj_p=0.2, skip=_ODD)
            c = replace(c, company=PrepPhrase(PREPOSITIONS[prep], np))
        elif v.frame == "acc" and v.objects in ("FD", "F", "B") and c.acc is not None and self.chance(0.2):
            c = replace(c, company=PrepPhrase(PREPOSITIONS["for"], self.noun_phrase("P", adj_p=0.2, skip=_ODD)))
        if can_negate(c) and self.chance(0.1):
            c = replace(c, negated=True)
        return c

    def _predicate(self, c: Clause, kinds: str, head: NounPhrase | None) -> Clause:
        subject = head if c.subject is None else c.subject  # a relative clause's subject is its head
        own = subject.adj if isinstance(subject, NounPhrase) else None  # "the blue bed is …"
        adjectives = tuple(a for a in _adjectives_for(kinds) if not clashes(own, a))
        if "L" in kinds or "B" in kinds and "P" not in kinds or self.chance(0.65):
            return replace(c, pred=self.rng.choice(adjectives))
        return replace(c, place=self.place(motion=False, kinds=kinds))

    # -- sentences ---------------------------------------------------------------------------------

    def sentence(self) -> tuple[str, str]:
        """One random (English, German) pair."""
        kind = self.rng.choices(list(_SENTENCE_WEIGHTS), weights=list(_SENTENCE_WEIGHTS.values()))[0]
        return getattr(self, "_" + kind)()

    def _statement(self) -> tuple[str, str]:
        c = self.clause()
        if c.verb.frame != "say" and self.chance(0.25):
            return self._with_adverb(c)
        return join_words(english_clause(c)), join_words(german_main(c))

    def _with_adverb(self, c: Clause) -> tuple[str, str]:
        time = "modal" if c.modal is not None and c.tense == "present" else c.tense
        options = [en for en, (_, t) in ADVERBS.items() if t == time or (t == "present" and time == "modal")]
        adverb = self.rng.choice(options)
        return join_words([adverb, *english_clause(c)]), join_words(german_main(c, front=[ADVERBS[adverb][0]]))

    def _question(self) -> tuple[str, str]:
        c = replace(self.clause(frames="intr,motion,acc,dat,ditr,pred"), negated=False)  # no negative questions
        return join_words(english_question(c), "?"), join_words(german_question(c), "?")

    def subordinate_clauses(self) -> tuple[str, Clause, Clause]:
        """A conjunction ("because", "although", "while", "if"), a main clause and the clause it joins."""
        en_conj = self.rng.choice(list(CONJUNCTIONS))
        main, sub = self.clause(frames="intr,motion,acc,dat,pred"), self.clause(frames="intr,motion,acc,dat,pred")
        if en_conj == "if":  # keep both clauses in the present: "if" + past changes the meaning
            main, sub = replace(main, tense="present"), replace(sub, tense="present")
        elif en_conj == "while":  # at the same time: the same tense ("… drove while the bears followed")
            main, sub = same_tense(main, sub)
        return en_conj, main, sub

    def _subordinate(self) -> tuple[str, str]:
        en_conj, main, sub = self.subordinate_clauses()
        de_sub = german_subordinate(sub, CONJUNCTIONS[en_conj])
        en_sub = [en_conj, *english_clause(sub)]
        if self.chance(0.4):  # the clause first: it fills the first field, the verb follows at once
            return join_words([*en_sub, ",", *english_clause(main)]), join_words(german_main(main, [*de_sub, ","]))
        return join_words([*english_clause(main), *en_sub]), join_words([*german_main(main), ",", *de_sub])

    def _reported(self) -> tuple[str, str]:
        c = self.clause(frames="say")
        return join_words(english_clause(c)), join_words(german_main(c))

    def _relative(self) -> tuple[str, str]:
        head = self.noun_phrase("PA", plural_p=0.25, adj_p=0.25, skip=("no",))
        gap = self.rng.choices(["subject", "acc", "dat"], weights=[5, 3, 2])[0]
        head = replace(head, relative=self.clause(gap=gap, head=head))
        main = self.clause(frames="intr,motion,acc,pred", subject=head)
        return join_words(english_clause(main)), join_words(german_main(main))


# Adjectives that exclude each other (or repeat): "the blue bed is black", "the old man is young".
EXCLUSIVE: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "black white brown grey red blue green yellow", "old young new", "big small tall", "rich poor",
    "happy sad", "fast slow", "clean dirty", "expensive cheap", "long short", "interesting boring",
    "cold hot warm", "quiet loud", "tired", "hungry", "ill", "empty", "dark", "heavy", "fresh", "fat",
))  # fmt: skip


def clashes(attributive: Adjective | None, predicate: Adjective) -> bool:
    """Whether "the <attributive> noun is <predicate>" contradicts or repeats itself."""
    if attributive is None:
        return False
    return attributive.en == predicate.en or any({attributive.en, predicate.en} <= g for g in EXCLUSIVE)


@cache
def _nouns_of(kinds: str) -> tuple[Noun, ...]:
    return tuple(n for k in kinds for n in NOUNS if k in n.kinds)  # a noun of two kinds counts twice


@cache
def _nouns_named(names: tuple[str, ...]) -> tuple[Noun, ...]:
    return tuple(n for n in NOUNS if n.en in names)


_ONLY_TO_SWIM = ("lake",)  # a place only for swimming in (and jumping or running into)
_NOT_FOR_ANIMALS = ("office", "shop", "restaurant", "museum", "library", "school", "city")


@cache
def _places(motion: bool, animal: bool) -> tuple[str, ...]:
    """The English names of the nouns that may be a place (``motion``: a direction) of a subject."""
    kinds = "L" if motion else "LS"
    names = tuple(dict.fromkeys(n.en for n in _nouns_of(kinds)))
    return tuple(n for n in names if (motion or n not in _ONLY_TO_SWIM) and not (animal and n in _NOT_FOR_ANIMALS))


@cache
def _adjectives_for(kinds: str) -> tuple[Adjective, ...]:
    return tuple(a for a in ADJECTIVES if set(a.kinds) & set(kinds))


@cache
def _determiners(number: str, skip: tuple[str, ...]) -> tuple[Determiner, ...]:
    """Determiners for a singular ("sg"), plural ("pl") or mass noun, the English words in ``skip`` left out."""
    if number == "pl":
        return tuple(d for d in DETERMINERS if (d.en_plural or d.kind == "bare") and d.en_plural not in skip)
    if number == "mass":
        return tuple(d for d in DETERMINERS if d.mass and (d.en or d.kind == "bare") and d.en not in skip)
    return tuple(d for d in DETERMINERS if d.en and d.en not in skip)


@cache
def _verbs_for_subject(kinds: str, frames: str) -> tuple[Verb, ...]:
    wanted = frames.split(",")
    return tuple(v for v in VERBS if v.frame in wanted and set(kinds) & set(v.subjects))


@cache
def _verbs_for_object(frame: str, kinds: str) -> tuple[Verb, ...]:
    return tuple(v for v in VERBS if v.frame == frame and set(kinds) & set(v.objects))


_ALL_FRAMES = "intr,motion,acc,dat,ditr,prep,pred"
_ODD = ("no", "every", "many", "some")  # determiners that sound odd in "with …", "to …", "for …"
_OWNER_DETS = (("the", "def"), ("this", "der"), ("my", "ein"), ("our", "ein"), ("his", "ein"))
_PLACE_DETS = (("a", "ein"), ("this", "der"), ("my", "ein"), ("our", "ein"), ("his", "ein"), ("her", "ein"))
_FRAME_WEIGHTS = {"intr": 3, "motion": 3, "acc": 8, "dat": 3, "ditr": 4, "prep": 1, "pred": 3, "say": 0}
_SENTENCE_WEIGHTS = {"statement": 10, "question": 3, "subordinate": 4, "reported": 2, "relative": 3}


# -- splits ----------------------------------------------------------------------------------------

SPLITS = ("train", "valid", "test")
SplitPairs = dict[str, list[tuple[str, str]]]


def split_of(german: str, seed: int, held_out: float = 0.1) -> str:
    """Which split a German sentence belongs to: a fixed function of its text and the seed.

    ``held_out`` of all sentences go to validation and as many to test; the rest to training.
    """
    digest = hashlib.blake2b(f"{seed}\x00{german}".encode(), digest_size=8).digest()
    u = int.from_bytes(digest, "big") / 2**64  # uniform in [0, 1)
    return "test" if u < held_out else "valid" if u < 2 * held_out else "train"


def generate_pairs(seed: int = 0, min_words: int = 4, max_words: int = 15) -> Iterator[tuple[str, str]]:
    """An endless stream of distinct (English, German) pairs, the same for the same seed.

    Sentences with fewer than ``min_words`` or more than ``max_words`` words (in either
    language) are skipped, and so is an English sentence already given.
    """
    maker, seen, misses = SentenceMaker(random.Random(seed)), set(), 0
    while True:
        en, de = maker.sentence()
        if en in seen or not all(min_words <= word_count(t) <= max_words for t in (en, de)):
            misses += 1
            if misses > 100_000:  # only with absurd limits (max_words=3): fail instead of spinning
                raise RuntimeError(f"no new sentence with {min_words}…{max_words} words in 100,000 tries")
            continue
        misses = 0
        seen.add(en)
        yield en, de


def sentence_splits(
    n_train: int = 60_000, n_valid: int = 1000, n_test: int = 1000, seed: int = 0, max_words: int = 15
) -> SplitPairs:
    """Train / validation / test lists of (English text, German text), disjoint in both languages.

    Pairs are drawn from :func:`generate_pairs` and sent to a split by :func:`split_of`, until
    each split is full. The same arguments give the same lists.
    """
    wanted = {"train": n_train, "valid": n_valid, "test": n_test}
    for name, n in wanted.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n_{name} must be an int >= 0, got {n!r}")
    out: SplitPairs = {name: [] for name in SPLITS}
    budget = 50 * (n_train + n_valid + n_test) + 10_000  # only hit if the sentence space were too small
    for tries, (en, de) in enumerate(generate_pairs(seed, max_words=max_words)):
        if tries > budget:
            counts = {k: len(v) for k, v in out.items()}
            raise RuntimeError(f"could not make {wanted} distinct sentences, got {counts}")
        split = split_of(de, seed)
        if len(out[split]) < wanted[split]:
            out[split].append((en, de))
        if all(len(out[k]) == wanted[k] for k in SPLITS):
            return out
    raise AssertionError("unreachable: generate_pairs is endless")
