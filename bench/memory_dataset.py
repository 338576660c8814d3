"""A synthetic memory dataset: one person's conversations over six months (January to June
2026), made by this project for :mod:`memory_eval` and :mod:`memory_latency`.

What is planted, among several hundred chit-chat memories (films watched, drinks had, articles
read, office trivia, family photos), many of which share words with the planted ones ("coffee",
"seat", "train", "hotel", "Berlin", "phone"):

* **standing preferences** (seat, diet, coffee, hotel room, travel mode, meeting times…), some
  with later **one-off exceptions** (episodes: "took the window seat this time") that must not
  be taken for the preference, and one restated in other words;
* **facts that change** — home city Lisbon → Berlin in May, employer Acme → Northwind in March,
  phone number, coffee order, exercise — where the old value must not be recalled as current,
  plus one old fact mentioned late ("before Acme she worked at Blue Harbour");
* **private facts** (budget, health, salary, therapy) said in private conversations, **family
  facts** in the family group, **work facts** in the work group;
* **queries** in other words than the stored ones ("which city does she live in now?" for
  "Moved to Berlin in May"), each with its audience, the moment it is asked about, the planted
  memories that answer it, the slots it asks about (for the stale-fact check) and the exceptions
  that must not outrank the preference; and leakage probes: group queries about private things,
  which no audible memory answers.

Everything is deterministic for a seed. Each memory carries its ground-truth validity
(``true_from`` / ``true_to``), independent of what the store later decides, so a memory the
store keeps valid for too long counts as stale.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from steward.domain.memory import MemoryKind

START = date(2026, 1, 5)
END = date(2026, 6, 28)
EVAL_AT = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
PRIVATE = "private"
FAMILY = "group:family"
WORK = "group:work"
PUBLIC = "public"


def _at(day: str, hour: int = 19) -> datetime:
    return datetime.combine(date.fromisoformat(day), time(hour), tzinfo=UTC)


@dataclass(kw_only=True)
class Planted:
    """One memory as extraction would write it, with what is really true about it."""

    key: str
    """Stable name in the dataset (``pref.seat``); memory ids are assigned by the store."""
    content: str
    kind: MemoryKind
    subjects: tuple[str, ...] = ()
    slot: str | None = None
    importance: float = 0.5
    valid_from: datetime | None = None
    """What extraction would pass as ``valid_from`` (a stated time), else None."""
    valid_to: datetime | None = None
    """What extraction would pass as ``valid_to`` (a stated end), else None."""
    true_from: datetime | None = None
    """Ground truth: from when it is really true (None: as far back as matters)."""
    true_to: datetime | None = None
    """Ground truth: until when it is really true (None: still is)."""
    category: str = "chit-chat"
    restated_by: str | None = None
    """A later memory saying the same in other words (the store may close this one for it)."""

    def true_at(self, when: datetime) -> bool:
        started = self.true_from is None or self.true_from <= when
        return started and (self.true_to is None or when < self.true_to)


@dataclass(kw_only=True)
class Session:
    """One conversation: when, in front of whom, and the memories extraction took from it."""

    id: str
    at: datetime
    audience: str
    memories: list[Planted] = field(default_factory=list)


@dataclass(kw_only=True, frozen=True)
class Query:
    id: str
    text: str
    audience: str
    at: datetime
    """The moment asked about (the evaluation date, or a past one for history questions)."""
    evidence: tuple[tuple[str, ...], ...] = ()
    """Each item: the keys of memories any one of which answers one part of the question."""
    slots: tuple[str, ...] = ()
    """Slots asked about: a retrieved memory of these slots not true at ``at`` is stale."""
    exceptions: tuple[str, ...] = ()
    """Episodes that must not rank above the standing preference asked about."""
    category: str = ""


@dataclass(kw_only=True)
class Dataset:
    sessions: list[Session]
    queries: list[Query]
    eval_at: datetime
    seed: int

    def planted(self) -> Iterator[tuple[Session, Planted]]:
        for session in self.sessions:
            for memory in session.memories:
                yield session, memory

    def by_key(self) -> dict[str, Planted]:
        return {m.key: m for _, m in self.planted()}


# --- the planted story -------------------------------------------------------------------------

P, F, E, R, D = (
    MemoryKind.PREFERENCE,
    MemoryKind.FACT,
    MemoryKind.EPISODE,
    MemoryKind.RELATIONSHIP,
    MemoryKind.DECISION,
)

# fmt: off
# (day, audience, key, kind, slot, content, subjects, extra)
_STORY: list[tuple[str, str, str, MemoryKind, str | None, str, tuple[str, ...], dict[str, Any]]]
_STORY = [
    # home city and neighbourhood: Lisbon until May, then Berlin
    ("2026-01-06", PRIVATE, "fact.city1", F, "home_city",
     "Lives in Lisbon, in the Alfama neighbourhood", ("Lisbon", "Alfama"),
     {"true_to": _at("2026-05-01", 0), "category": "changed"}),
    ("2026-05-03", PRIVATE, "fact.city2", F, "home_city", "Moved to Berlin in May", ("Berlin",),
     {"valid_from": _at("2026-05-01", 0), "true_from": _at("2026-05-01", 0),
      "category": "changed"}),
    ("2026-05-03", PRIVATE, "fact.flat2", F, "neighbourhood",
     "Her new flat is in Kreuzberg, close to the canal", ("Kreuzberg", "Berlin"),
     {"true_from": _at("2026-05-01", 0), "category": "changed"}),
    ("2026-05-04", FAMILY, "fam.spare_room", F, None,
     "The new Berlin flat has a spare room for visitors", ("Berlin",),
     {"category": "family"}),
    # employer: Blue Harbour (mentioned late), Acme, then Northwind from 16 March
    ("2026-01-09", PRIVATE, "fact.emp1", F, "employer",
     "Works as a product designer at Acme Logistics", ("Acme Logistics",),
     {"true_from": _at("2025-01-06", 0), "true_to": _at("2026-03-16", 0),
      "category": "changed"}),
    ("2026-03-16", PRIVATE, "fact.emp2", F, "employer",
     "Started a new job as design lead at Northwind Energy", ("Northwind Energy",),
     {"valid_from": _at("2026-03-16", 0), "true_from": _at("2026-03-16", 0),
      "category": "changed"}),
    ("2026-06-12", PRIVATE, "fact.emp0", F, "employer",
     "Before Acme she spent three years at Blue Harbour Studio", ("Blue Harbour Studio",),
     {"valid_from": _at("2021-09-01", 0), "valid_to": _at("2024-12-31", 0),
      "true_from": _at("2021-09-01", 0), "true_to": _at("2024-12-31", 0),
      "category": "changed"}),
    # phone number
    ("2026-01-10", PRIVATE, "fact.phone1", F, "phone", "Her mobile number is +351 912 345 678",
     (), {"true_to": _at("2026-04-28", 12), "category": "changed"}),
    ("2026-04-28", PRIVATE, "fact.phone2", F, "phone",
     "Got a German SIM, new number +49 151 2345 6789", (),
     {"true_from": _at("2026-04-28", 12), "category": "changed"}),
    # exercise
    ("2026-01-21", PRIVATE, "fact.ex1", F, "exercise",
     "Swims at the municipal pool every Tuesday and Friday", (),
     {"true_to": _at("2026-05-10", 0), "category": "changed"}),
    ("2026-05-10", PRIVATE, "fact.ex2", F, "exercise",
     "Now runs in the Tiergarten three mornings a week", ("Tiergarten",),
     {"valid_from": _at("2026-05-10", 0), "true_from": _at("2026-05-10", 0),
      "category": "changed"}),
    # preferences, their exceptions and a restatement
    ("2026-01-08", PRIVATE, "pref.seat", P, "seat_preference",
     "Prefers an aisle seat on flights", (),
     {"importance": 0.7, "category": "preference", "restated_by": "pref.seat2"}),
    ("2026-03-20", PRIVATE, "exc.seat", E, None,
     "Took the window seat on the Zurich trip to see the Alps", ("Zurich", "Alps"),
     {"category": "exception"}),
    ("2026-05-30", PRIVATE, "pref.seat2", P, "seat_preference",
     "Still wants to sit on the aisle for anything longer than an hour in the air", (),
     {"importance": 0.7, "category": "preference"}),
    ("2026-01-12", PRIVATE, "pref.diet", P, "diet", "Is vegetarian and does not eat fish either",
     ("food",), {"importance": 0.8, "category": "preference", "restated_by": "fam.diet"}),
    ("2026-02-08", FAMILY, "fam.diet", P, "diet",
     "Told the family she no longer eats meat or fish", ("food",),
     {"importance": 0.8, "category": "family"}),
    ("2026-04-18", PRIVATE, "exc.diet", E, None,
     "Had grilled sardines at the Santo António festival, a one-off for tradition",
     ("sardines", "Lisbon"), {"category": "exception"}),
    ("2026-01-15", PRIVATE, "pref.coffee1", P, "coffee", "Takes her coffee black, no sugar", (),
     {"true_to": _at("2026-03-02", 0), "category": "changed"}),
    ("2026-03-02", PRIVATE, "pref.coffee2", P, "coffee",
     "Switched her coffee to oat-milk flat whites", (),
     {"true_from": _at("2026-03-02", 0), "category": "changed"}),
    ("2026-05-11", PRIVATE, "exc.coffee", E, None,
     "Had an espresso tonic at the airport café while waiting", (), {"category": "exception"}),
    ("2026-02-03", PRIVATE, "pref.hotel", P, "hotel_room",
     "Wants a quiet hotel room on a high floor, away from the lift", (),
     {"importance": 0.6, "category": "preference"}),
    ("2026-06-05", PRIVATE, "exc.hotel", E, None,
     "Booked a ground-floor room in Seville because of her sprained ankle", ("Seville",),
     {"category": "exception"}),
    ("2026-02-15", PRIVATE, "pref.travel", P, "travel_mode",
     "Takes the train instead of flying for journeys under five hours", (),
     {"importance": 0.6, "category": "preference"}),
    ("2026-05-22", PRIVATE, "exc.travel", E, None,
     "Flew to Madrid because a rail strike cancelled her booking", ("Madrid",),
     {"category": "exception"}),
    ("2026-01-20", PRIVATE, "pref.music", P, "music_at_work",
     "Likes quiet jazz in the background when working", ("jazz",),
     {"category": "preference"}),
    ("2026-03-05", PRIVATE, "pref.contact", P, "reminder_channel",
     "Wants reminders by text message, not by email", (), {"category": "preference"}),
    ("2026-02-10", WORK, "pref.meetings", P, "meeting_time",
     "Prefers meetings in the morning and never after 4 pm", (),
     {"importance": 0.6, "category": "work"}),
    ("2026-04-07", WORK, "exc.meetings", E, None,
     "Agreed to a 6 pm call with the Singapore team as an exception", ("Singapore",),
     {"category": "exception"}),
    # private matters
    ("2026-02-20", PRIVATE, "priv.budget", F, "dining_budget",
     "Keeps eating out under 300 euros a month", (), {"importance": 0.6, "category": "private"}),
    ("2026-01-25", PRIVATE, "priv.penicillin", F, None, "Is allergic to penicillin",
     ("penicillin",), {"importance": 0.9, "category": "private"}),
    ("2026-04-02", PRIVATE, "priv.thyroid", F, None,
     "Takes levothyroxine for her thyroid every morning before breakfast", ("levothyroxine",),
     {"importance": 0.8, "category": "private"}),
    ("2026-03-18", PRIVATE, "priv.salary", F, "salary",
     "Her salary at Northwind is 78,000 euros a year", ("Northwind Energy",),
     {"importance": 0.6, "category": "private"}),
    ("2026-02-26", PRIVATE, "priv.therapy", F, None,
     "Sees a therapist on Thursday evenings", (), {"importance": 0.6, "category": "private"}),
    # family group
    ("2026-01-18", FAMILY, "fam.sister", R, None, "Ana is her older sister", ("Ana",),
     {"category": "family"}),
    ("2026-01-18", FAMILY, "fam.nephew", R, None, "Tomás is Ana's son and is seven",
     ("Tomás", "Ana"), {"category": "family"}),
    ("2026-01-25", FAMILY, "fam.mother", R, None, "Their mother Rosa lives in Porto",
     ("Rosa", "Porto"), {"category": "family"}),
    ("2026-02-02", FAMILY, "fam.birthday", F, None, "Ana's birthday is on 14 March", ("Ana",),
     {"category": "family"}),
    ("2026-02-22", FAMILY, "fam.peanuts", F, None, "Tomás is allergic to peanuts", ("Tomás",),
     {"importance": 0.8, "category": "family"}),
    ("2026-01-25", FAMILY, "fam.lunch", D, None,
     "The family meets for lunch at Rosa's place every other Sunday", ("Rosa",),
     {"category": "family"}),
    ("2026-04-12", FAMILY, "fam.holiday", D, None,
     "Family holiday booked in the Algarve for the first week of August", ("Algarve",),
     {"category": "family"}),
    # work group
    ("2026-03-17", WORK, "work.manager", R, None, "Her manager at Northwind is Jonas Weber",
     ("Jonas Weber", "Northwind Energy"), {"category": "work"}),
    ("2026-03-23", WORK, "work.standup", F, None, "Team stand-up is at 9:30 every weekday", (),
     {"category": "work"}),
    ("2026-04-01", WORK, "work.project", F, "work_project",
     "Leads the Falcon redesign, due at the end of June", ("Falcon",), {"category": "work"}),
]

_QUERIES: list[Query] = [
    # standing preferences, asked in other words
    Query(id="seat", text="Which spot on the plane should I reserve for her?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("pref.seat", "pref.seat2"),), slots=("seat_preference",),
          exceptions=("exc.seat",), category="preference"),
    Query(id="diet", text="Are there foods she won't touch that I should tell the restaurant?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("pref.diet", "fam.diet"),), slots=("diet",),
          exceptions=("exc.diet",), category="preference"),
    Query(id="hotel", text="What kind of accommodation should I ask for when I book her stay?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("pref.hotel",),), slots=("hotel_room",),
          exceptions=("exc.hotel",), category="preference"),
    Query(id="travel", text="For a trip to Paris, should I get her rail or plane tickets?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("pref.travel",),), slots=("travel_mode",),
          exceptions=("exc.travel",), category="preference"),
    Query(id="music", text="What should be playing on the speakers while she concentrates?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("pref.music",),), slots=("music_at_work",),
          category="preference"),
    Query(id="contact", text="How should I nudge her about an upcoming appointment?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("pref.contact",),),
          slots=("reminder_channel",), category="preference"),
    Query(id="meetings", text="When is a good time to put a call with her in the calendar?",
          audience=WORK, at=EVAL_AT, evidence=(("pref.meetings",),), slots=("meeting_time",),
          exceptions=("exc.meetings",), category="preference"),
    # facts that changed: the current value
    Query(id="city-now", text="Which city does she live in now?", audience=PRIVATE, at=EVAL_AT,
          evidence=(("fact.city2",),), slots=("home_city", "neighbourhood"),
          category="changed"),
    Query(id="flat-now", text="What part of town is her apartment in?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("fact.flat2",),), slots=("home_city", "neighbourhood"),
          category="changed"),
    Query(id="employer-now", text="Which company is she working for at the moment?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("fact.emp2",),), slots=("employer",),
          category="changed"),
    Query(id="phone-now", text="What digits do I dial to reach her mobile?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("fact.phone2",),), slots=("phone",), category="changed"),
    Query(id="coffee-now", text="How does she like her morning brew these days?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("pref.coffee2",),), slots=("coffee",),
          exceptions=("exc.coffee",), category="changed"),
    Query(id="fitness-now", text="What does she do to stay fit lately?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("fact.ex2",),), slots=("exercise",), category="changed"),
    # facts that changed: asked about the past
    Query(id="city-feb", text="Where was her home back in the winter?", audience=PRIVATE,
          at=_at("2026-02-15", 12), evidence=(("fact.city1",),),
          slots=("home_city", "neighbourhood"), category="history"),
    Query(id="employer-feb", text="Who was her employer in February?", audience=PRIVATE,
          at=_at("2026-02-20", 12), evidence=(("fact.emp1",),), slots=("employer",),
          category="history"),
    Query(id="employer-2023", text="Which studio did she work at a few years ago?",
          audience=PRIVATE, at=_at("2023-06-01", 12), evidence=(("fact.emp0",),),
          slots=("employer",), category="history"),
    Query(id="coffee-jan", text="How did she order her coffee in January?", audience=PRIVATE,
          at=_at("2026-01-31", 12), evidence=(("pref.coffee1",),), slots=("coffee",),
          category="history"),
    Query(id="phone-mar", text="What was her Portuguese mobile number?", audience=PRIVATE,
          at=_at("2026-03-10", 12), evidence=(("fact.phone1",),), slots=("phone",),
          category="history"),
    # the exceptions themselves, asked about
    Query(id="window", text="Has she ever sat by the window when flying?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("exc.seat",),), category="exception"),
    Query(id="madrid", text="Why did she go to Madrid by plane rather than by rail?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("exc.travel",),), category="exception"),
    Query(id="ankle", text="Why was she on the ground floor in Spain?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("exc.hotel",),), category="exception"),
    # private matters, asked in private
    Query(id="budget", text="How much can I spend on restaurants for her this month?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("priv.budget",),), slots=("dining_budget",),
          category="private"),
    Query(id="antibiotic", text="Is there any medicine she must avoid?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("priv.penicillin",),), category="private"),
    Query(id="pills", text="Which prescription does she need daily?", audience=PRIVATE,
          at=EVAL_AT, evidence=(("priv.thyroid",),), category="private"),
    Query(id="salary", text="What does her new position pay?", audience=PRIVATE, at=EVAL_AT,
          evidence=(("priv.salary",),), slots=("salary",), category="private"),
    Query(id="thursday", text="What is her standing appointment late in the week?",
          audience=PRIVATE, at=EVAL_AT, evidence=(("priv.therapy",),), category="private"),
    # several memories at once
    Query(id="rome-trip",
          text="I'm booking her a trip to Rome: how should she travel, where should she sit on "
          "board and what sort of room does she like?",
          audience=PRIVATE, at=EVAL_AT,
          evidence=(("pref.travel",), ("pref.seat", "pref.seat2"), ("pref.hotel",)),
          slots=("travel_mode", "seat_preference", "hotel_room"),
          exceptions=("exc.seat", "exc.hotel", "exc.travel"), category="multi"),
    Query(id="dinner-plan",
          text="Planning a dinner out for her: what can she order and how much may I spend?",
          audience=PRIVATE, at=EVAL_AT,
          evidence=(("pref.diet", "fam.diet"), ("priv.budget",)),
          slots=("diet", "dining_budget"), exceptions=("exc.diet",), category="multi"),
    # the family group
    Query(id="sister-bday", text="When do we celebrate her sibling's birthday?", audience=FAMILY,
          at=EVAL_AT, evidence=(("fam.birthday",),), category="family"),
    Query(id="snacks", text="What should we keep out of the snacks for the little boy?",
          audience=FAMILY, at=EVAL_AT, evidence=(("fam.peanuts",),), category="family"),
    Query(id="relatives", text="Who are her closest relatives?", audience=FAMILY, at=EVAL_AT,
          evidence=(("fam.sister",), ("fam.nephew",), ("fam.mother",)), category="family"),
    Query(id="sunday", text="How often do we all get together to eat at the weekend?",
          audience=FAMILY, at=EVAL_AT, evidence=(("fam.lunch",),), category="family"),
    Query(id="summer", text="Where are we all going on vacation this summer?", audience=FAMILY,
          at=EVAL_AT, evidence=(("fam.holiday",),), category="family"),
    Query(id="visit", text="Is there a bed for us when we come to see her in Germany?",
          audience=FAMILY, at=EVAL_AT, evidence=(("fam.spare_room",),), category="family"),
    Query(id="grill", text="Will she have some of the fish we're putting on the barbecue?",
          audience=FAMILY, at=EVAL_AT, evidence=(("fam.diet",),), slots=("diet",),
          category="family"),
    # the work group
    Query(id="standup", text="What time is the daily team check-in?", audience=WORK,
          at=EVAL_AT, evidence=(("work.standup",),), category="work"),
    Query(id="project", text="What is she heading up right now?", audience=WORK, at=EVAL_AT,
          evidence=(("work.project",),), slots=("work_project",), category="work"),
    Query(id="boss", text="Who does she report to?", audience=WORK, at=EVAL_AT,
          evidence=(("work.manager",),), category="work"),
    # leakage probes: group or public questions about things kept for someone else
    Query(id="probe-pay", text="What is her pay at Northwind?", audience=WORK, at=EVAL_AT,
          category="probe"),
    Query(id="probe-health", text="Does she have any health problems or allergies?",
          audience=WORK, at=EVAL_AT, category="probe"),
    Query(id="probe-holiday", text="What are her family's plans for August?", audience=WORK,
          at=EVAL_AT, category="probe"),
    Query(id="probe-budget", text="How much is she allowed to spend on dinners out?",
          audience=FAMILY, at=EVAL_AT, category="probe"),
    Query(id="probe-therapy", text="Is she seeing anyone for her mental health?",
          audience=FAMILY, at=EVAL_AT, category="probe"),
    Query(id="probe-job", text="Which company does she work for and who is her boss?",
          audience=FAMILY, at=EVAL_AT, category="probe"),
    Query(id="probe-pills", text="Does she take any medication every morning?",
          audience=FAMILY, at=EVAL_AT, category="probe"),
    Query(id="probe-public", text="Where does she live and what is her phone number?",
          audience=PUBLIC, at=EVAL_AT, category="probe"),
]

# fmt: on

# --- chit-chat ---------------------------------------------------------------------------------

# fmt: off
FRIENDS = ["Leo", "Inês", "Priya", "Tom", "Chloé", "Rui", "Hannah", "Kenji", "Sofia", "Marek",
           "Lucía", "Dev", "Nora", "Omar", "Beatriz", "Felix"]
PLACES = ["the market", "the riverside", "the old town", "the corner bookshop", "the park",
          "the harbour", "the gallery", "the co-working space", "the station", "the library",
          "the flea market", "the rooftop bar"]
CITIES = ["Lisbon", "Berlin", "Porto", "Madrid", "Paris", "Rome", "Zurich", "Seville",
          "Hamburg", "Vienna", "Prague", "Amsterdam"]
FILMS = ["a documentary about octopuses", "an old Kurosawa film", "a heist comedy",
         "a series about chefs", "a nature film about glaciers", "a French thriller",
         "a biopic of a jazz pianist", "a cartoon about a lost robot"]
TOPICS = ["urban gardening", "electric bikes", "the history of typography", "sourdough starters",
          "solar panels", "chess openings", "bird migration", "tiny apartments",
          "tram networks", "ceramic glazes", "ancient Rome", "sleep science", "board game design",
          "fermentation", "mechanical keyboards", "coffee roasting", "airline loyalty schemes",
          "night trains across Europe", "hotel architecture", "budgeting apps",
          "vegetarian cooking", "marathon training"]
FOODS = ["ramen", "falafel", "dumplings", "pastéis de nata", "tapas", "pho", "a vegan burger",
         "pizza al taglio", "a poke bowl", "churros", "grilled octopus", "currywurst"]
DRINKS = ["a matcha latte", "a cappuccino", "mint tea", "a glass of vinho verde", "a cold brew",
          "hot chocolate", "a ginger beer", "an espresso", "a flat white"]
ITEMS = ["a rain jacket", "a new kettle", "running shoes", "a linen shirt", "a desk lamp",
         "noise-cancelling headphones", "a yoga mat", "a travel adapter", "a houseplant",
         "a second-hand bike", "a phone case", "a suitcase"]
ADJECTIVES = ["surprisingly good", "too crowded", "lovely", "disappointing", "noisy", "calm",
              "overpriced", "charming"]
ACTIVITIES = ["repotting plants", "sorting old photos", "practising the guitar",
              "cleaning the balcony", "learning German vocabulary", "baking bread",
              "fixing the bike", "writing postcards", "walking along the river",
              "doing a jigsaw puzzle"]
WEATHER = ["rainy", "sunny", "windy", "freezing", "humid", "grey"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
COLLEAGUES = ["Jonas", "Aylin", "Mateo", "Greta", "Samir", "Linh", "Oskar", "Paula"]
DOCS = ["onboarding deck", "style guide", "Q2 roadmap", "icon set", "user research summary",
        "design system docs", "accessibility audit"]
MEETINGS = ["design critique", "sprint planning", "all-hands", "retro", "vendor call",
            "hiring panel"]
RELATIVES = ["Ana", "Rosa", "Tomás", "Uncle Jorge", "cousin Marta"]
THINGS = ["the new puppy", "the school play", "the garden", "the beach", "a birthday cake",
          "the old family house", "the football match", "the snowman"]

# (kind, template, subject fields)
_GENERAL = [
    (E, "Watched {film} with {friend}", ("friend",)),
    (E, "Tried {food} at a new place near {place}", ()),
    (E, "Had {drink} with {friend} at {place}", ("friend",)),
    (E, "Spent the afternoon {activity}", ()),
    (E, "Bought {item} at {place}", ()),
    (E, "The weather in {city} was {weather} on {weekday}", ("city",)),
    (E, "Went to {place} with {friend}, which was {adj}", ("friend",)),
    (E, "{friend}'s train to {city} was delayed by an hour", ("friend", "city")),
    (E, "The seats at the cinema near {place} were {adj}", ()),
    (E, "Helped {friend} carry boxes into a new flat in {city}", ("friend", "city")),
    (E, "{friend} called from a new phone number", ("friend",)),
    (E, "Saw a cheap flight to {city} but did not book it", ("city",)),
    (E, "{friend} stayed at a hotel in {city} and found it {adj}", ("friend", "city")),
    (MemoryKind.NOTE, "Read an article about {topic}", ()),
    (MemoryKind.NOTE, "Talked with {friend} about {topic}", ("friend",)),
    (MemoryKind.NOTE, "{friend} recommended a podcast about {topic}", ("friend",)),
    (MemoryKind.NOTE, "Wants to learn more about {topic} some day", ()),
    (MemoryKind.NOTE, "{friend} is thinking about moving to {city}", ("friend", "city")),
]
_WORK = [
    (E, "Reviewed the {doc} with {colleague}", ("colleague",)),
    (E, "The {meeting} ran over time on {weekday}", ()),
    (E, "Fixed the spacing in the {doc}", ()),
    (MemoryKind.NOTE, "{colleague} is out of office until {weekday}", ("colleague",)),
    (E, "The coffee machine in the office kitchen broke again", ()),
    (MemoryKind.NOTE, "{colleague} shared notes about {topic}", ("colleague",)),
    (E, "{colleague} booked the big room for the {meeting}", ("colleague",)),
]
_FAMILY = [
    (E, "{relative} sent photos of {thing}", ("relative",)),
    (E, "{relative} asked for the recipe for {food}", ("relative",)),
    (MemoryKind.NOTE, "{relative} is planning a trip to {city}", ("relative", "city")),
    (E, "{relative} called on {weekday} to talk about {thing}", ("relative",)),
    (E, "Tomás told everyone about {thing}", ("Tomás",)),
]
_FIELDS = {
    "friend": FRIENDS, "place": PLACES, "city": CITIES, "film": FILMS, "topic": TOPICS,
    "food": FOODS, "drink": DRINKS, "item": ITEMS, "adj": ADJECTIVES, "activity": ACTIVITIES,
    "weather": WEATHER, "weekday": WEEKDAYS, "colleague": COLLEAGUES, "doc": DOCS,
    "meeting": MEETINGS, "relative": RELATIVES, "thing": THINGS,
}

# fmt: on


def chit_chat(rng: random.Random, audience: str) -> tuple[MemoryKind, str, tuple[str, ...]]:
    """One filler memory of the sort a conversation in front of ``audience`` would give."""
    pool = _WORK if audience == WORK else _FAMILY if audience == FAMILY else _GENERAL
    if audience != PRIVATE and rng.random() < 0.4:
        pool = _GENERAL
    kind, template, subject_fields = rng.choice(pool)
    values = {name: rng.choice(choices) for name, choices in _FIELDS.items()}
    text = template.format(**values)
    subjects = tuple(values.get(s, s) for s in subject_fields)
    return kind, text[0].upper() + text[1:], subjects


def generate(seed: int = 7, *, chatter_per_session: tuple[int, int] = (2, 5)) -> Dataset:
    """The dataset: planted sessions on their days plus a conversation on most other days,
    each with a few chit-chat memories."""
    rng = random.Random(seed)
    sessions: dict[tuple[str, str], Session] = {}
    for when, audience, key, kind, slot, content, subjects, extra in _STORY:
        at = _at(when, 19 if audience == PRIVATE else 12 if audience == WORK else 20)
        session = sessions.setdefault(
            (when, audience),
            Session(
                id=f"ses_{when.replace('-', '')}_{audience.replace('group:', '')}",
                at=at,
                audience=audience,
            ),
        )
        session.memories.append(
            Planted(key=key, content=content, kind=kind, slot=slot, subjects=subjects, **extra)
        )
    day = START
    while day <= END:
        if rng.random() < 0.85:
            audience = rng.choices([PRIVATE, FAMILY, WORK], weights=[55, 25, 20])[0]
            if audience == WORK and day.weekday() >= 5:
                audience = PRIVATE
            day_audience = (day.isoformat(), audience)
            if day_audience not in sessions:
                sessions[day_audience] = Session(
                    id=f"ses_{day:%Y%m%d}_{audience.replace('group:', '')}",
                    at=_at(day.isoformat(), 8 + rng.randrange(14)),
                    audience=audience,
                )
        day += timedelta(days=1)
    seen: set[str] = {m.content for s in sessions.values() for m in s.memories}
    ordered = sorted(sessions.values(), key=lambda s: (s.at, s.id))
    for session in ordered:
        for _ in range(rng.randint(*chatter_per_session)):
            kind, text, subjects = chit_chat(rng, session.audience)
            if text in seen:
                continue
            seen.add(text)
            session.memories.append(
                Planted(
                    key=f"chat.{len(seen)}",
                    content=text,
                    kind=kind,
                    subjects=subjects,
                    importance=round(rng.uniform(0.2, 0.4), 2),
                )
            )
        rng.shuffle(session.memories)
    return Dataset(sessions=ordered, queries=list(_QUERIES), eval_at=EVAL_AT, seed=seed)
