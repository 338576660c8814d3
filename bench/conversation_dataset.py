"""A synthetic conversation dataset in the manner of LoCoMo, made by this project for
:mod:`memory_eval`: long chats between two people over ten months (August 2025 to June 2026),
stored as raw dialog turns ("Speaker: text"), not as extracted statements.

Each conversation is between a main speaker (the person whose memory it is) and a bilingual
friend who writes some sessions, and some lines, in Chinese or mixed. Among several thousand
turns of small talk — much of it sharing words with the facts (other people's weddings, other
dogs, other trips, the same city and company names) — each conversation plants about twenty
facts across its sessions: a sister's engagement and wedding and her husband's job (so "where
does her brother-in-law work?" needs two turns), a move between cities, a change of employer, a
pet, a trip, a hobby dropped for another, a car swapped, a book recommended and later finished,
facts said in Chinese. Events carry their date only through the session they are told in, as
in LoCoMo ("we moved last weekend").

Questions (about fifty per conversation) say what they ask in other words than the evidence,
and each lists its evidence: items of turn keys, any one turn of an item answering that part,
so a question with two items needs two turns (multi-hop). Tags: ``multi`` (more than one item),
``temporal`` (a when-question, a month named, "before the move"), ``chinese`` (the question or
its evidence in Chinese, including English questions about Chinese lines). Each question also
names what answers it — words in the evidence, or for a when-question the month of the
evidence turn — so a test can check the evidence really answers it.

Deterministic for a seed; pure Python, no model.
"""

# the Chinese lines use full-width Chinese punctuation, as people write it
# ruff: noqa: RUF001

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

START = date(2025, 8, 4)
END = date(2026, 6, 19)
EVAL_AT = datetime(2026, 6, 22, 9, 0, tzinfo=UTC)


@dataclass(kw_only=True, frozen=True)
class Turn:
    """One line of dialog."""

    key: str
    """Stable name in the dataset: ``c1.move`` for a planted turn, ``c1.s04.t17`` otherwise."""
    speaker: str
    """Who says it."""
    text: str
    """What they say."""
    at: datetime
    """When it was said."""

    @property
    def content(self) -> str:
        """As stored: the speaker's name, then the line."""
        return f"{self.speaker}: {self.text}"


@dataclass(kw_only=True)
class Session:
    """One sitting of a conversation."""

    id: str
    """``c1.s04``."""
    at: datetime
    """When it started (each turn a minute after the previous one)."""
    turns: list[Turn]
    """In order."""


@dataclass(kw_only=True)
class Conversation:
    """Two people's chat over months."""

    id: str
    """``c1``."""
    owner: str
    """The main speaker, whose memory the turns go into."""
    friend: str
    """The bilingual friend."""
    sessions: list[Session]
    """In time order."""


@dataclass(kw_only=True, frozen=True)
class Question:
    """A question about one conversation, with the turns that answer it."""

    id: str
    """``c1.employer-now``."""
    conversation: str
    """Which conversation it is about."""
    text: str
    """As asked."""
    evidence: tuple[tuple[str, ...], ...]
    """Items of turn keys: any one turn of an item answers that part of the question."""
    answer: tuple[str, ...] = ()
    """Words the evidence holds that answer it."""
    answer_month: str | None = None
    """For a when-question: the month (``May 2026``) of the evidence turn."""
    tags: frozenset[str] = frozenset()
    """``multi``, ``temporal``, ``chinese``."""


@dataclass(kw_only=True)
class ConversationDataset:
    """Conversations and the questions about them, all asked at ``eval_at``."""

    seed: int
    """The generator's seed."""
    conversations: list[Conversation]
    """Each stored for its own person."""
    questions: list[Question]
    """About all conversations."""
    eval_at: datetime
    """When the questions are asked."""

    def turns(self) -> Iterator[tuple[Conversation, Turn]]:
        """Every turn, conversation by conversation, in time order within each."""
        for conversation in self.conversations:
            for session in conversation.sessions:
                for turn in session.turns:
                    yield conversation, turn

    def by_key(self) -> dict[str, Turn]:
        """Every turn by its key."""
        return {turn.key: turn for _, turn in self.turns()}


# --- what varies between conversations ---------------------------------------------------------

# fmt: off
OWNERS = ["Ana", "Jonas", "Priya", "Marta", "Felix", "Nadia", "Tomás", "Elif"]
FRIENDS = ["Mei", "Wei", "Lin", "Xiaoyu", "Jun", "Hui", "Yan", "Qing"]
SISTERS = ["Lena", "Clara", "Sofia", "Irene", "Greta", "Olga", "Bea"]
PARTNERS = ["Tom", "Marco", "David", "Pedro", "Lukas", "Sami", "Owen"]
PARTNER_WORK = ["the harbour office", "the city library", "the water utility", "the ferry company",
                "the county hospital", "the planetarium", "the tram depot"]
CITIES = ["Lisbon", "Porto", "Valencia", "Lyon", "Leipzig", "Utrecht", "Gdansk", "Bologna",
          "Ghent", "Graz"]
EMPLOYERS = ["Acme Logistics", "Northwind Energy", "Blue Harbour Studio", "Kestrel Labs",
             "Orchard Analytics", "Granite Bank", "Juniper Health", "Atlas Freight"]
CAFES = ["Café Lumen", "the Copper Kettle", "Bean & Barrel", "Café Aurora", "the Little Grind"]
LANDMARKS = ["river", "cathedral", "old stadium", "botanical garden", "harbour cranes"]
TRIPS = [("hiking", "the Dolomites"), ("sailing", "Crete"), ("cycling", "the Scottish Highlands"),
         ("kayaking", "the Norwegian fjords"), ("climbing", "Kalymnos"), ("surfing", "the Algarve")]
PETS = [("dog", "狗", "beagle", "Biscuit"), ("dog", "狗", "border collie", "Pepper"),
        ("cat", "猫", "tabby", "Miso"), ("rabbit", "兔子", "lop-eared rabbit", "Tofu"),
        ("dog", "狗", "greyhound", "Noodle")]
HOBBIES = ["pottery", "salsa dancing", "life drawing", "choir singing", "woodworking",
           "bouldering"]
FRIEND_JOBS = [("Night shifts on the children's ward again, I'm a zombie", "children's ward"),
               ("My class of eight-year-olds put on a volcano play today", "eight-year-olds"),
               ("Inspected three bridges for the council today, all still standing", "bridges"),
               ("The pharmacy was chaos, I filled two hundred prescriptions", "prescriptions")]
HOMETOWNS = ["成都", "杭州", "西安", "昆明", "哈尔滨", "厦门"]
MOM_HOBBIES = ["广场舞", "太极拳", "书法", "京剧", "乒乓球"]
DISTRICTS = ["Riverside", "Oakfield", "Hillcrest", "Northgate", "Millbrook"]
STUDY_CITIES = ["Edinburgh", "Toronto", "Melbourne", "Zurich", "Vienna"]
ALLERGENS = ["peanuts", "shellfish", "sesame", "kiwi", "walnuts"]
ALLERGENS_ZH = {"peanuts": "花生", "shellfish": "贝类", "sesame": "芝麻", "kiwi": "猕猴桃",
                "walnuts": "核桃"}
GIFTS = ["a record player", "a cast-iron pan", "a pair of binoculars", "a silk scarf",
         "a sourdough starter kit"]
CARS = [("Fiat Panda", "Skoda Octavia estate"), ("Renault Clio", "Volvo V60"),
        ("Opel Corsa", "Toyota Corolla wagon"), ("Peugeot 208", "Subaru Outback")]
BOOKS = ["The Salt Path", "Piranesi", "Klara and the Sun", "The Overstory", "Circe",
         "Stoner"]
RACES = [("Harbour Run", "1:58"), ("River City", "2:04"), ("Autumn Lakes", "1:52"),
         ("Old Town", "2:11")]
PHRASES = ["加油", "慢慢来", "好久不见", "没关系", "一路平安"]
# fmt: on


def _values(rng: random.Random) -> dict[str, str]:
    city1, city2 = rng.sample(CITIES, 2)
    emp1, emp2 = rng.sample(EMPLOYERS, 2)
    activity, dest = rng.choice(TRIPS)
    species, species_zh, breed, pet = rng.choice(PETS)
    hobby1, hobby2 = rng.sample(HOBBIES, 2)
    job, job_answer = rng.choice(FRIEND_JOBS)
    car1, car2 = rng.choice(CARS)
    race, race_time = rng.choice(RACES)
    allergen = rng.choice(ALLERGENS)
    return {
        "sister": rng.choice(SISTERS), "partner": rng.choice(PARTNERS),
        "pwork": rng.choice(PARTNER_WORK), "city1": city1, "city2": city2, "emp1": emp1,
        "emp2": emp2, "cafe": rng.choice(CAFES), "landmark": rng.choice(LANDMARKS),
        "activity": activity, "dest": dest, "species": species, "species_zh": species_zh,
        "breed": breed, "pet": pet, "hobby1": hobby1, "hobby2": hobby2, "job": job,
        "job_answer": job_answer, "hometown": rng.choice(HOMETOWNS),
        "mom_hobby": rng.choice(MOM_HOBBIES), "district": rng.choice(DISTRICTS),
        "study_city": rng.choice(STUDY_CITIES), "allergen": allergen,
        "allergen_zh": ALLERGENS_ZH[allergen], "gift": rng.choice(GIFTS), "car1": car1,
        "car2": car2, "book": rng.choice(BOOKS), "race": race, "race_time": race_time,
        "phrase": rng.choice(PHRASES),
    }  # fmt: skip


# --- the planted facts: (key, where in the months 0..1, who says it — O owner, F friend, text)

# fmt: off
_FACTS: list[tuple[str, float, str, str]] = [
    ("job1", 0.06, "O", "Work at {emp1} is hectic, they put me on the billing migration and it "
     "never ends"),
    ("sister_intro", 0.08, "O", "Guess what, my little sister {sister} got engaged to her "
     "boyfriend {partner}!"),
    ("friend_job", 0.1, "F", "{job}"),
    ("city1_life", 0.12, "O", "Sunday ritual: walking to {cafe} in {city1} for a pastry and "
     "the papers"),
    ("hobby1", 0.16, "O", "I signed up for a {hobby1} class on Wednesday evenings, first "
     "session was fun"),
    ("pet", 0.2, "F", "We adopted a {breed} from the shelter, his name is {pet}!"),
    ("wedding", 0.27, "O", "{sister} and {partner} tied the knot on Saturday, the whole family "
     "cried at the ceremony"),
    ("hometown", 0.3, "F", "我是在{hometown}长大的，过年一定要回去看爸妈。"),
    ("book_rec", 0.32, "F", "You have to read '{book}', I couldn't put it down"),
    ("allergy", 0.36, "O", "Careful with the menu on Friday, I swell up if I eat anything with "
     "{allergen} in it"),
    ("mom", 0.4, "F", "我妈最近迷上了{mom_hobby}，每天早上都去公园。"),
    ("book_read", 0.43, "O", "Finished '{book}' on the train home, the ending wrecked me"),
    ("move", 0.47, "O", "The boxes are finally unpacked, we moved from {city1} to {city2} last "
     "weekend"),
    ("flat", 0.5, "O", "The new flat has a balcony facing the {landmark}, I drink my tea out "
     "there every morning"),
    ("pet2", 0.53, "F", "{pet} ate half of my sandal this morning, bad boy"),
    ("car", 0.55, "O", "Sold the old {car1} and bought a used {car2}, the bikes fit in the "
     "back now"),
    ("partner_work", 0.58, "O", "{partner} finally got a permanent contract at {pwork}, he's "
     "so relieved"),
    ("race", 0.61, "F", "I ran the {race} half marathon in {race_time}, a new personal best!"),
    ("study", 0.64, "F", "我妹妹 got into the master's programme in {study_city}，九月开学！"),
    ("job2", 0.67, "O", "Today was my first day at {emp2}! New badge, new laptop, new commute"),
    ("phrase", 0.7, "O", "我在学中文! You taught me to say '{phrase}' and I use it all the "
     "time"),
    ("trip", 0.74, "O", "Back from ten days of {activity} in {dest}, my legs are destroyed but "
     "it was worth it"),
    ("district", 0.78, "F", "我们下个月搬到{district}那边，离地铁站很近。"),
    ("hobby2", 0.82, "O", "I quit {hobby1}, these days I'm totally into {hobby2} instead"),
    ("visit", 0.86, "F", "Booked my train to come and see your new place over the long "
     "weekend!"),
    ("gift", 0.9, "F", "Did {gift} arrive? I ordered it for your birthday last week"),
    ("dentist", 0.93, "O", "Dentist on Thursday, the wisdom tooth finally has to come out"),
    ("baby", 0.96, "O", "{sister} and {partner} are expecting a baby next spring!"),
]

# (id, text, evidence items, answer words, when-question, tags); {O} owner, {F} friend,
# {m_<fact>} the month of that fact's session
_QUESTIONS: list[tuple[str, str, tuple[tuple[str, ...], ...], tuple[str, ...], bool, str]] = [
    ("sister-husband", "Who did {O}'s sister end up marrying?",
     (("sister_intro", "wedding"),), ("{partner}",), False, ""),
    ("inlaw-work", "Where is {O}'s brother-in-law employed?",
     (("sister_intro", "wedding"), ("partner_work",)), ("{pwork}",), False, "multi"),
    ("wedding-when", "When was {sister}'s wedding?", (("wedding",),), (), True, "temporal"),
    ("baby", "Is someone in {O}'s family having a child?", (("baby",),), ("baby",), False, ""),
    ("zh-sister", "{O}的妹妹嫁给了谁？", (("sister_intro", "wedding"),), ("{partner}",), False,
     "chinese"),
    ("city-now", "Which city does {O} live in now?", (("move",),), ("{city2}",), False, ""),
    ("city-before", "Where did {O} live before relocating?", (("move", "city1_life"),),
     ("{city1}",), False, "temporal"),
    ("move-when", "When did {O} relocate to {city2}?", (("move",),), (), True, "temporal"),
    ("cafe", "Which coffee place did {O} go to on Sundays before the move?", (("city1_life",),),
     ("{cafe}",), False, "temporal"),
    ("balcony", "What is the view from {O}'s new home?", (("flat",),), ("{landmark}",), False,
     ""),
    ("zh-city", "{O}现在住在哪个城市？", (("move",),), ("{city2}",), False, "chinese"),
    ("employer-now", "Who is {O}'s current employer?", (("job2",),), ("{emp2}",), False, ""),
    ("employer-wedding", "Which company was {O} at when {sister} got married?",
     (("job1",), ("wedding",)), ("{emp1}",), False, "multi temporal"),
    ("job2-when", "When did {O} start working at {emp2}?", (("job2",),), (), True, "temporal"),
    ("old-project", "What was {O} stuck on at the old job?", (("job1",),),
     ("billing migration",), False, ""),
    ("pet-kind", "What kind of animal did {F} bring home?", (("pet",),), ("{breed}",), False,
     ""),
    ("pet-name", "What is the name of {F}'s pet?", (("pet",),), ("{pet}",), False, ""),
    ("pet-chewed", "What did {F}'s {breed} destroy?", (("pet",), ("pet2",)), ("sandal",),
     False, "multi"),
    ("pet-when", "When did {F} adopt {pet}?", (("pet",),), (), True, "temporal"),
    ("zh-pet", "{F}的{species_zh}叫什么名字？", (("pet",),), ("{pet}",), False, "chinese"),
    ("trip-month", "What did {O} do last {m_trip}?", (("trip",),), ("{activity}",), False,
     "temporal"),
    ("trip-where", "Where did {O} spend that long holiday that wore out the legs?",
     (("trip",),), ("{dest}",), False, ""),
    ("trip-when", "When did {O} travel to {dest}?", (("trip",),), (), True, "temporal"),
    ("hobby-now", "What pastime is {O} into these days?", (("hobby2",),), ("{hobby2}",), False,
     ""),
    ("hobby-autumn", "What evening course did {O} start in {m_hobby1}?", (("hobby1",),),
     ("{hobby1}",), False, "temporal"),
    ("hobby-quit", "What did {O} give up doing?", (("hobby2",),), ("{hobby1}",), False, ""),
    ("friend-job", "What does {F} do for a living?", (("friend_job",),), ("{job_answer}",),
     False, ""),
    ("hometown-zh", "{F}是在哪里长大的？", (("hometown",),), ("{hometown}",), False, "chinese"),
    ("hometown-en", "Which city did {F} grow up in?", (("hometown",),), ("{hometown}",), False,
     "chinese"),
    ("mom-zh", "{F}的妈妈最近爱上了什么活动？", (("mom",),), ("{mom_hobby}",), False, "chinese"),
    ("mom-en", "What has {F}'s mother been doing every morning lately?", (("mom",),),
     ("{mom_hobby}",), False, "chinese"),
    ("study", "Where is {F}'s younger sister going to do her master's degree?", (("study",),),
     ("{study_city}",), False, "chinese"),
    ("allergy", "Which ingredient makes {O} ill?", (("allergy",),), ("{allergen}",), False, ""),
    ("zh-allergy", "{O}对什么食物过敏？", (("allergy",),), ("{allergen}",), False, "chinese"),
    ("gift", "What birthday present did {F} send {O}?", (("gift",),), ("{gift}",), False, ""),
    ("birthday-when", "When is {O}'s birthday, roughly?", (("gift",),), (), True, "temporal"),
    ("car-now", "What does {O} drive now?", (("car",),), ("{car2}",), False, ""),
    ("car-old", "Which vehicle did {O} get rid of?", (("car",),), ("{car1}",), False, ""),
    ("book-who", "Who suggested the novel {O} finished on the journey home?",
     (("book_rec",), ("book_read",)), ("{book}",), False, "multi"),
    ("book-what", "Which novel did {F} say was impossible to stop reading?", (("book_rec",),),
     ("{book}",), False, ""),
    ("race-time", "How fast did {F} finish the half marathon?", (("race",),), ("{race_time}",),
     False, ""),
    ("race-when", "When did {F} set a new personal best?", (("race",),), (), True, "temporal"),
    ("visit-city", "Which city is {F} taking the train to for the long weekend?",
     (("visit",), ("move",)), ("{city2}",), False, "multi"),
    ("phrase", "What Chinese expression has {O} learned from {F}?", (("phrase",),),
     ("{phrase}",), False, "chinese"),
    ("dentist", "What appointment did {O} have in {m_dentist}?", (("dentist",),),
     ("wisdom tooth",), False, "temporal"),
    ("district-zh", "{F}要搬到哪个区？", (("district",),), ("{district}",), False, "chinese"),
    ("district-en", "Which neighbourhood is {F} moving to?", (("district",),), ("{district}",),
     False, "chinese"),
    ("city-at-pet", "Where was {O} living when {F} adopted {pet}?",
     (("pet",), ("move", "city1_life")), ("{city1}",), False, "multi temporal"),
    ("employer-at-move", "Where was {O} working at the time of moving to {city2}?",
     (("move",), ("job1",)), ("{emp1}",), False, "multi temporal"),
]
# fmt: on

# --- small talk: (who may say it — O, F or * — and the line); many share words with the facts

# fmt: off
_CHAT: list[tuple[str, str]] = [
    ("*", "How was your {period}? Mine was {feeling}"), ("*", "Haha, that's so {person}"),
    ("*", "Ugh, {weekday}s. I had {chore} and {chore2}"),
    ("*", "I made {dish} for dinner {when}, {verdict}"), ("*", "Send me photos of the {thing}!"),
    ("*", "Talk soon, I have to {errand}"), ("*", "Did you sleep well? I was up at {hour}"),
    ("*", "It was {weather} all day here, so I stayed in and {chore}"),
    ("*", "I'm rewatching {show} again, {verdict}"),
    ("*", "We should call on {weekday} around {hour}"), ("*", "No way! {person} said that?"),
    ("*", "Work was long {when}, {colleague} kept scheduling meetings about the {project}"),
    ("*", "My colleague {colleague} is getting married in {month}, the invitations are "
     "gorgeous"),
    ("*", "My cousin just adopted a {other_breed} too, everybody is getting pets"),
    ("*", "{colleague} moved to {other_city} last year and regrets it"),
    ("*", "Have you ever been to {other_dest}? {colleague} keeps posting photos"),
    ("*", "Thinking about signing up for {other_hobby} lessons {when}, or is that silly?"),
    ("*", "I read a review of '{other_book}', sounds {verdict}"),
    ("*", "Did you watch the {sport} on TV {when}? What a finish"),
    ("*", "I need a dentist recommendation for {person}"),
    ("*", "The {vehicle} was delayed again {when}, {minutes} minutes this time"),
    ("*", "{colleague} brought {dish} to the office, {verdict}"),
    ("*", "I found a great bakery near the {spot}, their {pastry} is unreal"),
    ("*", "Ha, the {pet_word} video you sent {when}!"),
    ("*", "My neighbour's {other_breed} barks all night, I got maybe {minutes} minutes of "
     "sleep"),
    ("*", "Going to {person}'s birthday party on {weekday}"),
    ("*", "I should really book a holiday, maybe {other_dest} in {month}"),
    ("*", "My phone screen cracked {when}, what a week"),
    ("*", "Are you still doing the {other_hobby} thing with {person}?"),
    ("*", "Reading '{other_book}' at the moment, {verdict}"),
    ("*", "The rent went up {percent} percent again, I'm furious"),
    ("*", "Yes! Let's do {plan} on {weekday}"), ("*", "I'm so tired, {weekday} felt like a week"),
    ("*", "We had a team lunch at {other_cafe}, the {dish} was {verdict}"),
    ("*", "Can you believe it's already {month_now}?"),
    ("*", "{person} recommended a podcast about {topic}"),
    ("*", "I've been reading about {topic} all evening"),
    ("*", "Bought {item} {when}, already regretting it"),
    ("*", "The {spot} was packed {when}, no idea why"),
    ("O", "{sister} called {when} to complain about her {complaint} again"),
    ("O", "{partner} helped me fix the {broken} {when}, he is handy"),
    ("O", "The traffic in {any_city} gets worse every month, {minutes} minutes to cross town"),
    ("O", "{any_employer} is hiring again, {colleague} saw it on LinkedIn"),
    ("O", "{sister} sent me a video of her {thing}"),
    ("O", "Mum wants us all at hers for {dish} on {weekday}"),
    ("O", "There's a {festival} in {any_city} this weekend"),
    ("F", "The shift was quiet for once, I even had time for {dish}"),
    ("F", "My sister says hi, she's busy with {topic} these days"),
    ("F", "Mum sent another care package, full of {snack}"),
]
_CHAT_ZH: list[str] = [
    "今天{weather_zh}，我在家{chore_zh}。", "哈哈，{person_zh}真的这么说吗？",
    "好的，{weekday_zh}见！", "工作好累啊，{weekday_zh}还要加班到{hour_zh}。",
    "我刚看了一部关于{topic_zh}的纪录片，{verdict_zh}。",
    "你那边天气怎么样？我们这里{weather_zh}。", "{weekday_zh}我们去{place_zh}吧？",
    "我做了{dish_zh}，{verdict_zh}。", "最近睡得不太好，{hour_zh}才睡着。",
    "我同事{month_zh}结婚，请柬很漂亮。", "我表姐也养了一只{pet_zh}。",
    "{vehicle_zh}又晚点了，等了{minutes_zh}，气死我了。", "下次一起去{place_zh}喝咖啡吧！",
    "我妈又给我寄了一大箱{snack_zh}。", "你最近在看什么书？我在看{topic_zh}的书。",
    "明天{weekday_zh}，要{hour_zh}起床。", "{person_zh}说{place_zh}新开了一家店，{verdict_zh}。",
    "周末和{person_zh}去了{place_zh}，人好多。",
]
PERIODS = ["week", "weekend", "day", "Monday", "holiday"]
FEELINGS = ["chaotic", "quiet", "fine", "exhausting", "weirdly productive", "too short"]
PEOPLE = ["my flatmate", "my cousin Rita", "my neighbour", "my old teacher", "my boss",
          "Uncle Bo", "my friend Sam", "my gym buddy"]
CHORES = ["did laundry", "cleaned the fridge", "sorted old photos", "repotted plants",
          "fixed a shelf", "baked bread", "paid bills"]
VERDICTS = ["not bad at all", "a disaster", "surprisingly good", "pretty boring",
            "better than expected", "too salty"]
WHENS = ["yesterday", "last night", "this morning", "on Sunday", "earlier today"]
HOURS = ["5am", "6am", "7", "noon", "8pm", "midnight"]
THINGS = ["garden", "new haircut", "birthday cake", "view", "market haul", "sunset"]
ERRANDS = ["run", "catch the bus", "pick up groceries", "walk to a meeting", "cook"]
PROJECTS = ["budget", "website", "quarterly report", "new office", "audit"]
SPORTS = ["marathon", "football final", "tennis match", "cycling race", "ski jumping"]
VEHICLES = ["train", "bus", "tram", "ferry"]
MINUTES = ["ten", "twenty", "forty", "fifty", "ninety"]
SPOTS = ["station", "park", "office", "market", "river", "library"]
PASTRIES = ["cinnamon roll", "croissant", "rye loaf", "custard tart", "focaccia"]
PERCENTS = ["five", "eight", "ten", "twelve"]
PLANS = ["brunch", "a film night", "a long walk", "karaoke", "a museum trip"]
TOPICS = ["octopuses", "volcanoes", "the Roman empire", "sleep", "urban gardening",
          "black holes", "fermentation", "tiny houses"]
ITEMS = ["a rain jacket", "a new kettle", "running shoes", "a desk lamp", "a yoga mat",
         "headphones", "a houseplant"]
COMPLAINTS = ["neighbours", "landlord", "commute", "boss", "noisy radiator"]
BROKEN = ["bike", "washing machine", "wobbly table", "leaking tap", "door handle"]
FESTIVALS = ["street festival", "jazz festival", "food market", "book fair", "flea market"]
SNACKS = ["dried mango", "spicy peanuts", "sesame candy", "tea and biscuits", "rice crackers"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEATHER = ["rainy", "sunny", "windy", "freezing", "humid", "grey"]
DISHES = ["a mushroom risotto", "dumplings", "a lentil curry", "shakshuka", "ramen", "paella"]
SHOWS = ["an old sitcom", "a baking show", "a crime series", "a nature documentary"]
COLLEAGUES = ["Aylin", "Mateo", "Samir", "Linh", "Oskar", "Paula", "Ravi"]
MONTHS = ["October", "December", "March", "May", "July", "September"]
OTHER_BREEDS = ["dachshund", "poodle", "spaniel", "husky", "Maine Coon"]
PET_WORDS = ["dog", "cat", "puppy", "kitten"]
ZH = {
    "chore_zh": ["打扫卫生", "洗衣服", "看电视", "做饭", "整理照片", "睡懒觉"],
    "person_zh": ["我室友", "我表姐", "我同事", "我邻居", "我老板", "我大学同学"],
    "hour_zh": ["六点", "七点", "半夜", "十一点", "凌晨两点"],
    "verdict_zh": ["还不错", "太咸了", "特别好", "一般般", "有点无聊"],
    "month_zh": ["十月", "十二月", "三月", "五月", "下个月"],
    "vehicle_zh": ["地铁", "公交车", "火车", "电车"],
    "minutes_zh": ["十分钟", "二十分钟", "半个小时", "一个小时"],
    "snack_zh": ["零食", "茶叶", "辣条", "月饼", "牛肉干"],
    "weather_zh": ["下雨", "很冷", "阳光很好", "刮大风"],
    "topic_zh": ["海洋", "宇宙", "古代建筑", "美食"],
    "place_zh": ["公园", "海边", "博物馆", "夜市", "商场", "河边"],
    "dish_zh": ["饺子", "红烧肉", "麻婆豆腐", "番茄炒蛋"],
    "pet_zh": ["小狗", "小猫", "兔子"],
    "weekday_zh": ["周一", "周二", "周三", "周四", "周五", "周六", "周日"],
}
# fmt: on


def _chat_line(
    rng: random.Random, speaker: str, v: dict[str, str], chinese: bool, month_now: str
) -> str:
    if chinese:
        return rng.choice(_CHAT_ZH).format(**{k: rng.choice(c) for k, c in ZH.items()})
    lines = [text for who, text in _CHAT if who in ("*", speaker)]
    fill = {
        "weekday": rng.choice(WEEKDAYS), "weather": rng.choice(WEATHER),
        "dish": rng.choice(DISHES), "show": rng.choice(SHOWS),
        "colleague": rng.choice(COLLEAGUES), "month": rng.choice(MONTHS),
        "other_breed": rng.choice(OTHER_BREEDS), "pet_word": rng.choice(PET_WORDS),
        "other_city": rng.choice([c for c in CITIES if c not in (v["city1"], v["city2"])]),
        "any_city": rng.choice([v["city1"], v["city2"], *CITIES]),
        "other_dest": rng.choice([d for _, d in TRIPS if d != v["dest"]]),
        "other_hobby": rng.choice([h for h in HOBBIES if h not in (v["hobby1"], v["hobby2"])]),
        "other_book": rng.choice([b for b in BOOKS if b != v["book"]]),
        "other_cafe": rng.choice([c for c in CAFES if c != v["cafe"]]),
        "any_employer": rng.choice([v["emp1"], v["emp2"], *EMPLOYERS]),
        "sister": v["sister"], "partner": v["partner"], "period": rng.choice(PERIODS),
        "feeling": rng.choice(FEELINGS), "person": rng.choice(PEOPLE),
        "chore": rng.choice(CHORES), "chore2": rng.choice(CHORES),
        "verdict": rng.choice(VERDICTS), "when": rng.choice(WHENS), "hour": rng.choice(HOURS),
        "thing": rng.choice(THINGS), "errand": rng.choice(ERRANDS),
        "project": rng.choice(PROJECTS), "sport": rng.choice(SPORTS),
        "vehicle": rng.choice(VEHICLES), "minutes": rng.choice(MINUTES),
        "spot": rng.choice(SPOTS), "pastry": rng.choice(PASTRIES),
        "percent": rng.choice(PERCENTS), "plan": rng.choice(PLANS), "month_now": month_now,
        "topic": rng.choice(TOPICS), "item": rng.choice(ITEMS),
        "complaint": rng.choice(COMPLAINTS), "broken": rng.choice(BROKEN),
        "festival": rng.choice(FESTIVALS), "snack": rng.choice(SNACKS),
    }  # fmt: skip
    return rng.choice(lines).format(**fill)


def _conversation(
    rng: random.Random, number: int, owner: str, friend: str
) -> tuple[Conversation, list[Question]]:
    cid = f"c{number}"
    v = _values(rng)
    days = sorted(rng.sample(range((END - START).days + 1), rng.randint(25, 32)))
    starts = [
        datetime(d.year, d.month, d.day, rng.randrange(8, 22), tzinfo=UTC)
        for d in (START + timedelta(days=n) for n in days)
    ]
    # each fact in the session at its place in the months, give or take one
    placed: dict[int, list[tuple[str, str, str]]] = {}
    for key, where, who, text in _FACTS:
        index = round(where * (len(starts) - 1)) + rng.choice((-1, 0, 0, 1))
        index = min(max(index, 0), len(starts) - 1)
        speaker = owner if who == "O" else friend
        placed.setdefault(index, []).append((f"{cid}.{key}", speaker, text.format(**v)))
    # the friend writes about a quarter of the sessions in Chinese, and now and then mixes
    chinese_sessions = set(rng.sample(range(len(starts)), len(starts) // 4))
    sessions: list[Session] = []
    fact_at: dict[str, datetime] = {}
    for index, at in enumerate(starts):
        count = rng.randint(15, 40)
        lines: list[tuple[str, str, str]] = []
        for n in range(count - len(placed.get(index, []))):
            speaker = owner if n % 2 == 0 else friend
            chinese = speaker == friend and (index in chinese_sessions or rng.random() < 0.08)
            who = "O" if speaker == owner else "F"
            lines.append(("", speaker, _chat_line(rng, who, v, chinese, f"{at:%B}")))
        # the session's facts among the small talk, in the order they happen
        facts = placed.get(index, [])
        for offset, position in enumerate(sorted(rng.sample(range(1, count), len(facts)))):
            lines.insert(position, facts[offset])
        sid = f"{cid}.s{index + 1:02d}"
        turns = []
        for n, (key, speaker, text) in enumerate(lines):
            turn = Turn(
                key=key or f"{sid}.t{n + 1:02d}",
                speaker=speaker,
                text=text,
                at=at + timedelta(minutes=n),
            )
            turns.append(turn)
            if key:
                fact_at[key.removeprefix(f"{cid}.")] = turn.at
        sessions.append(Session(id=sid, at=at, turns=turns))
    fill = {"O": owner, "F": friend, **v}
    fill |= {f"m_{fact}": f"{when:%B}" for fact, when in fact_at.items()}
    questions = [
        Question(
            id=f"{cid}.{qid}",
            conversation=cid,
            text=text.format(**fill),
            evidence=tuple(tuple(f"{cid}.{k}" for k in item) for item in evidence),
            answer=tuple(a.format(**fill) for a in answer),
            answer_month=f"{fact_at[evidence[0][0]]:%B %Y}" if when else None,
            tags=frozenset(tags.split()),
        )
        for qid, text, evidence, answer, when, tags in _QUESTIONS
    ]
    return Conversation(id=cid, owner=owner, friend=friend, sessions=sessions), questions


def generate(seed: int = 7, *, conversations: int = 5) -> ConversationDataset:
    """``conversations`` chats of 25 to 32 sessions, 15 to 40 turns each, with their
    questions; the same for the same seed."""
    rng = random.Random(seed)
    owners = rng.sample(OWNERS, conversations)
    friends = rng.sample(FRIENDS, conversations)
    made = [_conversation(rng, n + 1, owners[n], friends[n]) for n in range(conversations)]
    return ConversationDataset(
        seed=seed,
        conversations=[c for c, _ in made],
        questions=[q for _, qs in made for q in qs],
        eval_at=EVAL_AT,
    )
