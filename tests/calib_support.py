"""A ten-fragment workspace written from scratch for the calibration tests: the operations handbook
of a small cider mill (a domain unlike the sample's payments and logistics software), with its own
golden set: ten answerable questions (three of them paraphrases the model fitted on the sample corpus
abstained on), and five the
handbook cannot answer."""

from __future__ import annotations

from pathlib import Path

CONFIG = """name: cider-mill
default_principal: ines
golden: golden.yaml
orgs:
  - name: mill
    title: Orchard Lane Cider Mill
principals:
  - name: ines
    orgs: [mill]
    lead_of: ["org=mill"]
    admin: true
  - name: tom
    orgs: [mill]
"""

FRAGMENTS = {
    "mill-press-cleaning": ("runbook", "Cleaning the rack-and-cloth press",
        ("After the last pressing of the day, strip the press cloths, rinse them in cold water, then soak them "
        "overnight in a 2% caustic solution. Scrub the racks with a soft brush, rinse twice and leave them to "
        "air-dry standing on edge. Never use hot water on fresh pomace residue: it sets the pectin.")),
    "mill-apple-sorting": ("policy", "Which apples go into the press",
        ("Windfalls are accepted only if collected within 24 hours of falling. Reject any fruit with brown rot, "
        "mould at the calyx or wasp damage larger than a thumbnail. Bruised apples are fine. Keep bittersweet "
        "varieties (Dabinett, Yarlington Mill) in separate bins from dessert apples until blending.")),
    "mill-fermentation-temperature": ("decision", "Fermentation temperature for the house cider",
        ("We ferment the house cider at 14-16 °C with a champagne yeast. Warmer ferments finished in a week but "
        "lost the apple aroma and smelled of nail varnish; below 12 °C the yeast stalled in the cold store. "
        "The fermentation room thermostat is set to 15 °C from September to December.")),
    "mill-sulphite-dosing": ("runbook", "Adding sulphite to fresh juice",
        ("Measure the juice pH with the bench meter first. At pH 3.4 add 100 ppm of sulphur dioxide (potassium "
        "metabisulphite, 1.7 g per 10 litres); at pH 3.6 add 150 ppm. Above pH 3.8 blend with sharper juice "
        "before dosing. Wait 24 hours before pitching the yeast.")),
    "mill-keg-returns": ("runbook", "Handling returned kegs from pubs",
        ("Returned kegs are logged by their serial number on the clipboard in the loading bay. Depressurise, "
        "remove the spear, and inspect the seal. Kegs with a dented chime go to the repair pile; the rest are "
        "washed in the keg washer on program 3 and stored upside down.")),
    "mill-labelling-law": ("policy", "What every bottle label must show",
        ("Labels must state the alcohol by volume to one decimal place, the volume in millilitres, the allergen "
        "warning for sulphites, the lot number and our address. Cider above 8.5% ABV must be sold as apple "
        "wine, with the different duty band. Trading standards checked us in 2023.")),
    "mill-bottle-conditioning": ("note", "Bottle conditioning and carbonation",
        ("For sparkling bottles we prime with 6 g of sugar per litre just before bottling and keep the crates "
        "at 18 °C for three weeks. Open a test bottle weekly; over-primed bottles have burst before, so use "
        "only the thick 500 ml bottles rated for pressure.")),
    "mill-pomace-disposal": ("note", "What happens to the pressed pulp",
        ("The spent pomace goes to Hollow Farm, who collect it on Mondays and Thursdays for pig feed. Keep it "
        "in the blue bins, lids on against wasps. In a heavy week the surplus goes to the compost heap behind "
        "the orchard, never into the drains.")),
    "mill-visitor-tours": ("policy", "Visitor tours and tastings",
        ("Tours run on Saturdays at 11:00 and 14:00 for up to twelve people, booked through the farm shop. "
        "Visitors wear hi-vis vests in the press house and may not enter the fermentation room. Tastings are "
        "for over-18s only; ask for ID when in doubt.")),
    "mill-first-aid": ("runbook", "Caustic splashes and first aid",
        ("If caustic cleaning solution gets on skin, rinse under running water for at least 15 minutes; for "
        "eyes use the eyewash station by the sink and call 111. The first-aid box is on the wall by the office "
        "door; record every incident in the accident book the same day.")),
}

ANSWERABLE = [
    ("a1", "how do we wash the cloths and racks after pressing", "mill-press-cleaning"),
    ("a2", "what's the rule about fruit picked up off the grass", "mill-apple-sorting"),
    ("a3", "what temperature should the cider ferment at and why", "mill-fermentation-temperature"),
    ("a4", "how much metabisulphite per litre of juice at a given pH", "mill-sulphite-dosing"),
    ("a5", "what do I do with kegs that come back from the pub", "mill-keg-returns"),
    ("a6", "what information is legally required on the bottle label", "mill-labelling-law"),
    ("a7", "how long do I keep crates warm so the drinks get bubbles", "mill-bottle-conditioning"),
    ("a8", "who takes away the leftover apple pulp after pressing", "mill-pomace-disposal"),
    ("a9", "is it ok for a 16 year old on the Saturday visit to have a sip", "mill-visitor-tours"),
    ("a10", "someone got cleaning chemical in their eye, what now", "mill-first-aid"),
]

UNANSWERABLE = [
    ("n1", "how do I rotate the TLS certificate on the payments API gateway"),
    ("n2", "what is our parental leave policy for new employees"),
    ("n3", "how do I reset the password of the office wifi router"),
    ("n4", "which quarterly tax return does the accountant file in April"),
    ("n5", "how do we plan the delivery van routes for Friday"),
]


def write_workspace_files(folder: Path) -> tuple[Path, Path]:
    """The handbook's fragment files and its workbench.yaml (naming golden.yaml beside it): (fragments, config)."""
    frags = folder / "fragments"
    frags.mkdir(parents=True, exist_ok=True)
    for fid, (kind, title, body) in FRAGMENTS.items():
        (frags / f"{fid}.md").write_text(
            f"---\nid: {fid}\nkind: {kind}\ntitle: \"{title}\"\nscope: {{org: mill}}\nowner: ines\n"
            f"created: 2025-09-01\nupdated: 2025-09-01\nstatus: active\n---\n{body}\n", encoding="utf-8")
    lines = ["queries:"]
    for qid, query, fid in ANSWERABLE:
        lines += [f"  - id: {qid}", f"    query: \"{query}\"", "    principal: tom", f"    relevant: [{fid}]"]
    for qid, query in UNANSWERABLE:
        lines += [f"  - id: {qid}", f"    query: \"{query}\"", "    principal: tom", "    relevant: []",
                  "    type: negative"]
    (folder / "golden.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = folder / "workbench.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return frags, config
