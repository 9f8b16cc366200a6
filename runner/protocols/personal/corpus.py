"""The personal-memory corpus: per person and horizon, dated user-assistant sessions in which facts about
the user are added, updated and deleted, with chatter between them, and the questions asked at the end.

Deterministic from (person index, horizon): the same person is the same in a grid of 5 or 40. A person
is `p00`..`p99`; a horizon is `weekly` (7 days, a session a day), `monthly` (30 days, every 2 days) or
`quarterly` (90 days, every 3 days). Longer horizons bring more changes and more chatter. A record is
one exchange (the user's message and the assistant's reply) with its person, session, date and text.

The answer key (each question's presence and forgetting criteria, the records that hold the facts) is
computed here on the controller and never enters a container; the records are all a container sees.
Every question's cutoff is its horizon's last session: only records up to it count.

Facts are single-valued (`city`, `employer`, `diet`, `partner`: updates replace the value) or sets
(`pets`, `hobbies`: values are added and deleted). A question's presence criteria are the current
values of the attributes it concerns; its forgetting criteria are the values they no longer have
(replaced or deleted within the horizon). Chatter includes confusers: a value of an attribute's pool
said of someone else ("my sister is visiting Graz"), which a reader that only spots names gets wrong.
"""

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

from runner.units.personal import Criterion, Question, Record, Unit, unit_digest

HORIZONS = {"weekly": (7, 1, 2), "monthly": (30, 2, 4), "quarterly": (90, 3, 7)}  # days, days apart, changes
RECORDS_PER_SESSION = (2, 4)
CONFUSER_RATE = {"weekly": 0.0, "monthly": 0.08, "quarterly": 0.1}  # of chatter records
QUESTIONS_PER_UNIT = 5
MAX_PERSONS = 100

NAMES = ["Alex", "Bea", "Caro", "Dario", "Emre", "Fenna", "Gil", "Hana", "Ivo", "Jule", "Kofi", "Lena", "Milo",
         "Nadia", "Otto", "Pia", "Quinn", "Rosa", "Sami", "Tove"]


@dataclass(frozen=True)
class Attribute:
    name: str
    single: bool
    label: str  # how an answer names it
    pool: tuple[str, ...]
    add: tuple[str, ...]  # templates that state a value ({v})
    update: tuple[str, ...] = ()  # single: the value changed to {v}
    delete: tuple[str, ...] = ()  # sets: {v} is gone
    confuse: tuple[str, ...] = ()  # {v} said of someone else


ATTRIBUTES = {a.name: a for a in (
    Attribute("city", True, "lives in",
              ("Lisbon", "Porto", "Valencia", "Lyon", "Krakow", "Gothenburg", "Tallinn", "Ljubljana", "Bologna",
               "Ghent", "Bratislava", "Aarhus", "Bilbao", "Graz", "Utrecht", "Tampere"),
              ("I live in {v}, have done for a few years now.", "Greetings from {v}, my home town these days.",
               "The trams here in {v} are late again, typical for where I live."),
              ("Big news: we moved to {v} last weekend, the boxes are everywhere.",
               "Finally settled into our new flat in {v}. New city, new routines!",
               "We've relocated to {v} for good, so local tips are welcome."),
              confuse=("My sister is visiting {v} next month, any sights worth seeing?",
                       "I watched a documentary about {v} yesterday, what a place.")),
    Attribute("employer", True, "works at",
              ("Northwind Analytics", "Bluefin Robotics", "Cedarvale Press", "Halcyon Health", "Ironbark Logistics",
               "Kestrel Media", "Lumen Foods", "Meridian Bank", "Nimbus Games", "Orchard Systems",
               "Pinecrest Energy", "Quarry Studios"),
              ("I work at {v}, mostly on reporting.", "Busy day at {v}, my job keeps me on my toes."),
              ("I started a new job at {v} this week!", "Signed the offer from {v}; my first day was Monday.",
               "I switched jobs, I'm at {v} now."),
              confuse=("A friend of mine just interviewed at {v}, is that a good company?",)),
    Attribute("diet", True, "diet",
              ("vegetarian", "vegan", "pescatarian", "gluten-free", "keto", "paleo", "lactose-free", "halal"),
              ("I'm {v}, so keep that in mind when you suggest food.", "As someone who eats {v}, I struggle at barbecues."),
              ("I've switched my diet, I'm {v} since last month.", "New diet for me: I eat {v} now.",
               "My doctor suggested a change, so I'm {v} from now on."),
              confuse=("My colleague went {v} and won't stop talking about it.",)),
    Attribute("partner", True, "partner",
              ("Ana", "Bram", "Chiara", "Dev", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kaia", "Luca",
               "Mira", "Noor", "Oskar", "Priya"),
              ("My partner {v} says hi!", "{v} and I have been together for three years now."),
              ("I've started seeing {v}, it's going really well.", "Life update: {v} and I are a couple now.",
               "I'm with {v} these days, we met at a friend's birthday."),
              confuse=("My cousin {v} is getting married in June.",)),
    Attribute("pets", False, "pets",
              ("Biscuit", "Pepper", "Mochi", "Waffles", "Ziggy", "Olive", "Pixel", "Clover", "Nacho", "Tofu",
               "Marble", "Pretzel"),
              ("We adopted a kitten called {v}!", "Our new puppy {v} chewed my shoes again.",
               "Meet {v}, the rabbit we brought home on Saturday."),
              delete=("We had to rehome {v}; he is no longer with us.", "Sadly {v} passed away last week.",
                      "{v} went to live with my parents on their farm, we don't have him anymore."),
              confuse=("My neighbour's dog {v} barks all night.",)),
    Attribute("hobbies", False, "hobbies",
              ("bouldering", "pottery", "birdwatching", "chess", "sourdough baking", "salsa dancing",
               "trail running", "watercolor painting", "woodworking", "beekeeping", "kayaking", "calligraphy"),
              ("I've taken up {v} on weekends.", "Spent the whole Sunday on {v}, I love it.",
               "Signed up for a {v} course, first class is Thursday."),
              delete=("I quit {v}, it just wasn't for me anymore.", "I stopped doing {v}, no time for it now.",
                      "Gave up on {v} this month, sold all the gear."),
              confuse=("My brother is obsessed with {v}, I don't get it.",)),
)}

# Other names the judges accept for a value (an answer may spell a city as its people do).
ALIASES = {"Krakow": ("Kraków", "Cracow"), "Gothenburg": ("Göteborg",), "watercolor painting": ("watercolour painting",),
           "sourdough baking": ("baking sourdough",), "trail running": ("trail runs",)}

REPLIES = ("Thanks for telling me, I'll keep that in mind.", "Good to know! Let me know if I can help with anything.",
           "Noted. That sounds like a lot of change, how are you feeling about it?", "Got it, thanks for the update.")
CHATTER = (
    ("Can you help me word an email to my landlord about the broken heating?",
     "Of course. Start with the date it broke, what you have tried, and ask for a repair date."),
    ("What's a quick way to learn Python decorators?",
     "Write a timing decorator first: a function that takes a function and returns a wrapper."),
    ("Any tips for sleeping better? I keep waking up at 4.", "Keep a fixed wake-up time and avoid screens late."),
    ("How long should I boil an egg for a runny yolk?", "About six minutes from boiling water, then cold water."),
    ("Recommend a podcast about history?", "Try a long-form narrative one; many cover a single era per season."),
    ("My laptop fan is really loud, is that bad?", "Usually dust; clean the vents and check what is using the CPU."),
    ("What is a good stretch after a long day at the desk?", "A doorway chest stretch and slow neck rolls help."),
    ("Explain compound interest like I'm five.", "Your money earns money, and then that money earns money too."),
    ("Is it worth learning touch typing as an adult?", "Yes, a few weeks of short daily practice pays off for years."),
    ("Help me plan a packing list for a rainy weekend.", "Layers, a waterproof jacket, spare socks and a dry bag."),
    ("What's the difference between a latte and a flat white?", "A flat white has less milk and a thinner foam."),
    ("How do I get rid of fruit flies in the kitchen?", "A bowl of vinegar with a drop of dish soap traps them."),
)


@dataclass
class GeneratedUnit(Unit):
    """A generated person over a horizon, with the history of its facts, from which its oracle is derived."""
    history: dict = field(default_factory=dict)  # attribute -> [(record id, op, value)]

    def current(self, attr: str) -> dict[str, str]:
        """The attribute's current values, each with the record that last stated it."""
        values: dict[str, str] = {}
        for rid, op, value in self.history.get(attr, []):
            if op == "delete":
                values.pop(value, None)
            elif ATTRIBUTES[attr].single:
                values = {value: rid}
            else:
                values[value] = rid
        return values

    def former(self, attr: str) -> list[str]:
        """Values the attribute held within the horizon and no longer holds."""
        now = self.current(attr)
        return sorted({v for _, _, v in self.history.get(attr, []) if v not in now})

    def oracle_evidence(self) -> list[str]:
        """The records stating every current fact: what an oracle memory returns."""
        return sorted({rid for a in ATTRIBUTES for rid in self.current(a).values()})


def person_ids(n: int) -> list[str]:
    return [f"p{i:02d}" for i in range(n)]


def build_unit(person: str, horizon: str) -> GeneratedUnit:
    index = int(person.removeprefix("p"))
    rng = random.Random(f"memgrid-personal/{person}/{horizon}")
    days, every, changes = HORIZONS[horizon]
    unit = GeneratedUnit(person, NAMES[index % len(NAMES)], horizon)
    start = date(2026, 1, 5) + timedelta(days=rng.randrange(0, 200))
    sessions = list(range(days // every))
    # Facts first stated in the first sessions; then the changes, one per session, in later sessions.
    initial = [(a, rng.choice(ATTRIBUTES[a].pool)) for a in ("city", "employer", "diet", "partner")]
    initial += [("pets", v) for v in rng.sample(ATTRIBUTES["pets"].pool, 2)]
    initial += [("hobbies", v) for v in rng.sample(ATTRIBUTES["hobbies"].pool, 2)]
    rng.shuffle(initial)
    first = max(1, len(sessions) // 3)
    planned: dict[int, list[tuple[str, str, str]]] = {}
    for i, (attr, value) in enumerate(initial):
        planned.setdefault(sessions[i % first], []).append((attr, "add", value))
    change_sessions = sorted(rng.sample(sessions[first:], min(changes, len(sessions) - first)))
    held = {a: {v for x, v in initial if x == a} for a in ATTRIBUTES}
    used = {a: set(vs) for a, vs in held.items()}  # every value the person ever has: confusers avoid them
    for s in change_sessions:
        attr = rng.choice(list(ATTRIBUTES))
        spec = ATTRIBUTES[attr]
        if not spec.single and len(held[attr]) > 1 and rng.random() < 0.5:
            op, value = "delete", rng.choice(sorted(held[attr]))
            held[attr].discard(value)
        else:
            op, value = "update" if spec.single else "add", rng.choice([v for v in spec.pool if v not in used[attr]])
            held[attr] = {value} if spec.single else held[attr] | {value}
        used[attr].add(value)
        planned.setdefault(s, []).append((attr, op, value))
    for s in sessions:
        day = (start + timedelta(days=s * every)).isoformat()
        events = planned.get(s, [])
        count = max(len(events), rng.randint(*RECORDS_PER_SESSION))
        slots = sorted(rng.sample(range(count), len(events)))
        for k in range(count):
            rid = f"{person}-{horizon[0]}{s:02d}-{k}"
            if k in slots:
                attr, op, value = events[slots.index(k)]
                spec = ATTRIBUTES[attr]
                template = rng.choice({"add": spec.add, "update": spec.update, "delete": spec.delete}[op])
                user, reply = template.format(v=value), rng.choice(REPLIES)
                unit.history.setdefault(attr, []).append((rid, op, value))
            elif rng.random() < CONFUSER_RATE[horizon]:
                attr = rng.choice(list(ATTRIBUTES))
                spec = ATTRIBUTES[attr]
                stranger = rng.choice([v for v in spec.pool if v not in used[attr]])
                user, reply = rng.choice(spec.confuse).format(v=stranger), rng.choice(REPLIES)
            else:
                user, reply = rng.choice(CHATTER)
            unit.records.append(Record(rid, person, s, day, f"user: {user}\nassistant: {reply}", user, reply))
    unit.questions = questions_of(unit, rng, sessions[-1])
    return unit


# (kind, attributes, text): the questions a unit draws from; {name} is the person's name.
QUESTION_TEMPLATES = (
    ("remembering", ("city",), "Which city does {name} live in now?"),
    ("remembering", ("employer",), "Which company does {name} work for at the moment?"),
    ("remembering", ("pets",), "What are the names of {name}'s pets these days?"),
    ("remembering", ("partner",), "What is the name of {name}'s partner?"),
    ("reasoning", ("partner", "city"), "{name} wants to book a table for two with their partner near home. "
                                       "In which city, and who is the second guest?"),
    ("reasoning", ("employer", "city"), "A new acquaintance asks {name} where they work and where they live. "
                                        "What should the answer be?"),
    ("recommending", ("diet",), "Suggest a dinner recipe {name} can cook tonight that fits how they eat."),
    ("recommending", ("hobbies",), "Suggest how {name} could spend a free Saturday, based on what they enjoy."),
    ("recommending", ("diet", "city"), "Recommend a restaurant search for {name}: which city and which diet should "
                                       "the search filter on?"),
)


def questions_of(unit: Unit, rng: random.Random, cutoff: int) -> list[Question]:
    """Questions about changed facts first (they test forgetting), then the others, five in all."""
    changed = {a for a in ATTRIBUTES if unit.former(a)}
    ranked = sorted(QUESTION_TEMPLATES, key=lambda t: (-len(changed & set(t[1])), rng.random()))
    out = []
    for i, (kind, attrs, text) in enumerate(ranked[:QUESTIONS_PER_UNIT]):
        presence = tuple(Criterion(v, ALIASES.get(v, ())) for a in attrs for v in sorted(unit.current(a)))
        forgetting = tuple(Criterion(v, ALIASES.get(v, ())) for a in attrs for v in unit.former(a))
        evidence = tuple(sorted({rid for a in attrs for rid in unit.current(a).values()}))
        forgotten = tuple(sorted({rid for a in attrs for rid, op, v in unit.history.get(a, [])
                                  if op != "delete" and v in unit.former(a)}))
        out.append(Question(f"{unit.id}-q{i}", kind, text.format(name=unit.name), attrs, cutoff, presence,
                            forgetting, evidence, forgotten))
    return out


def options(question: Question) -> dict[str, dict]:
    """What the LLM-free reader is told of a question: which attributes it asks about, whether each holds one
    value or a set, and the attribute's whole pool (every person's vocabulary, never this person's values)."""
    return {a: {"single": ATTRIBUTES[a].single, "label": ATTRIBUTES[a].label, "pool": list(ATTRIBUTES[a].pool)}
            for a in question.attributes}


DIGESTS_HEADER = """\
# sha256 of each generated person x horizon (its records and answer key), as runner/protocols/personal/corpus.py
# makes them; the data itself is never committed. tests/test_personal_corpus.py rebuilds every unit and compares.
# A generator change that moves the data renews this file with:
#   python -m runner.protocols.personal.corpus > corpus/personal/digests.yaml
"""


if __name__ == "__main__":
    print(DIGESTS_HEADER, end="")
    for p in person_ids(MAX_PERSONS):
        for h in HORIZONS:
            print(f"{p}-{h}: {unit_digest(build_unit(p, h))}")
