"""A synthetic stand-in for the KGen paper's private fraud dataset "F" (47 attributes, 1,599 rows).

The paper's F came from the Financial Forensics taskforce West-Brabant-Zeeland (Dutch tax authority):
suspicious-activity reports with dates, numbers, strings and places. It is not public, so this module
generates a table with the same shape and attribute types from a seed. Each row is one report about one
subject (a person, possibly self-employed). Attributes hang off a few latent variables (home region,
age, wealth, sector and whether the report turned out to be fraud), so quasi-identifiers are correlated the
way real ones are: postcode, city, phone area, bank branch and tax office agree; age follows from the birth
date; income, tax and balance follow age and wealth; fraud cases move more money abroad, at night, in cash.

Only Python's `random.Random(seed)` is used (its streams are stable across Python versions), so a seed
gives the same table on every machine. The schema is documented in docs/fraud-dataset.md.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgen.io import hierarchies as hierarchy_specs
from kgen.io.csvio import format_csv
from kgen.io.files import write_atomic
from kgen.io.table import Table
from lattice.hierarchy import Hierarchy

ROWS = 1599
IDENTIFIER = "record_id"
MISSING = ""

# The place mapping shipped with the generator: city -> (province, country, postcode range, phone area).
# West-Brabant and Zeeland are over-represented, as in the taskforce's data. Province names must be unique
# across countries for the mapping to be a tree, hence "Limburg (BE)".
CITIES: dict[str, tuple[str, str, tuple[int, int], str]] = {
    "Amsterdam": ("Noord-Holland", "Netherlands", (1011, 1109), "020"),
    "Haarlem": ("Noord-Holland", "Netherlands", (2011, 2037), "023"),
    "Alkmaar": ("Noord-Holland", "Netherlands", (1811, 1834), "072"),
    "Zaandam": ("Noord-Holland", "Netherlands", (1501, 1509), "075"),
    "Rotterdam": ("Zuid-Holland", "Netherlands", (3011, 3089), "010"),
    "Den Haag": ("Zuid-Holland", "Netherlands", (2491, 2599), "070"),
    "Leiden": ("Zuid-Holland", "Netherlands", (2311, 2334), "071"),
    "Dordrecht": ("Zuid-Holland", "Netherlands", (3311, 3329), "078"),
    "Utrecht": ("Utrecht", "Netherlands", (3511, 3585), "030"),
    "Amersfoort": ("Utrecht", "Netherlands", (3811, 3829), "033"),
    "Den Bosch": ("Noord-Brabant", "Netherlands", (5211, 5249), "073"),
    "Eindhoven": ("Noord-Brabant", "Netherlands", (5611, 5658), "040"),
    "Tilburg": ("Noord-Brabant", "Netherlands", (5011, 5049), "013"),
    "Breda": ("Noord-Brabant", "Netherlands", (4811, 4839), "076"),
    "Bergen op Zoom": ("Noord-Brabant", "Netherlands", (4611, 4625), "0164"),
    "Roosendaal": ("Noord-Brabant", "Netherlands", (4701, 4709), "0165"),
    "Oss": ("Noord-Brabant", "Netherlands", (5341, 5349), "0412"),
    "Middelburg": ("Zeeland", "Netherlands", (4331, 4339), "0118"),
    "Vlissingen": ("Zeeland", "Netherlands", (4381, 4389), "0118"),
    "Goes": ("Zeeland", "Netherlands", (4461, 4465), "0113"),
    "Terneuzen": ("Zeeland", "Netherlands", (4531, 4539), "0115"),
    "Maastricht": ("Limburg", "Netherlands", (6211, 6229), "043"),
    "Venlo": ("Limburg", "Netherlands", (5911, 5928), "077"),
    "Heerlen": ("Limburg", "Netherlands", (6411, 6422), "045"),
    "Arnhem": ("Gelderland", "Netherlands", (6811, 6846), "026"),
    "Nijmegen": ("Gelderland", "Netherlands", (6511, 6546), "024"),
    "Apeldoorn": ("Gelderland", "Netherlands", (7311, 7336), "055"),
    "Zwolle": ("Overijssel", "Netherlands", (8011, 8043), "038"),
    "Enschede": ("Overijssel", "Netherlands", (7511, 7548), "053"),
    "Groningen": ("Groningen", "Netherlands", (9711, 9747), "050"),
    "Leeuwarden": ("Friesland", "Netherlands", (8911, 8939), "058"),
    "Assen": ("Drenthe", "Netherlands", (9401, 9411), "0592"),
    "Almere": ("Flevoland", "Netherlands", (1311, 1363), "036"),
    "Lelystad": ("Flevoland", "Netherlands", (8211, 8245), "0320"),
    "Antwerpen": ("Antwerpen", "Belgium", (2000, 2660), "03"),
    "Gent": ("Oost-Vlaanderen", "Belgium", (9000, 9052), "09"),
    "Brugge": ("West-Vlaanderen", "Belgium", (8000, 8200), "050"),
    "Brussel": ("Brussel-Hoofdstad", "Belgium", (1000, 1210), "02"),
    "Hasselt": ("Limburg (BE)", "Belgium", (3500, 3512), "011"),
    "Aachen": ("Nordrhein-Westfalen", "Germany", (52062, 52080), "0241"),
    "Koeln": ("Nordrhein-Westfalen", "Germany", (50667, 51149), "0221"),
    "Duesseldorf": ("Nordrhein-Westfalen", "Germany", (40210, 40629), "0211"),
    "Kleve": ("Nordrhein-Westfalen", "Germany", (47533, 47559), "02821"),
    "Oldenburg": ("Niedersachsen", "Germany", (26121, 26135), "0441"),
    "London": ("England", "United Kingdom", (0, 0), "020"),
    "Paris": ("Ile-de-France", "France", (75001, 75020), "01"),
    "Zuerich": ("Zuerich (canton)", "Switzerland", (8001, 8099), "044"),
    "Limassol": ("Limassol District", "Cyprus", (3011, 3150), "25"),
    "Dubai": ("Dubai (emirate)", "United Arab Emirates", (0, 0), "04"),
    "Hong Kong": ("Hong Kong Island", "Hong Kong", (0, 0), "852"),
}

# country -> region; the countries with a city above plus typical destinations of suspicious transfers.
COUNTRIES: dict[str, str] = {
    "Netherlands": "EU", "Belgium": "EU", "Germany": "EU", "France": "EU", "Spain": "EU", "Poland": "EU",
    "Bulgaria": "EU", "Cyprus": "EU", "Luxembourg": "EU", "Romania": "EU",
    "United Kingdom": "Europe (non-EU)", "Switzerland": "Europe (non-EU)", "Turkey": "Europe (non-EU)",
    "Morocco": "Africa", "Nigeria": "Africa", "United Arab Emirates": "Asia", "Hong Kong": "Asia",
    "China": "Asia", "United States": "Americas", "Suriname": "Americas", "Curacao": "Americas",
    "Panama": "Americas", "Cayman Islands": "Americas",
}

# SBI sector code -> (typical monthly turnover in euros, VAT-liable, share of cash business)
SECTORS: dict[str, tuple[float, bool, float]] = {
    "4711": (9000, True, 0.5), "5610": (6000, True, 0.6), "4511": (25000, True, 0.3),
    "6419": (40000, False, 0.0), "6820": (30000, False, 0.1), "4120": (18000, True, 0.2),
    "4941": (15000, True, 0.1), "9602": (3000, True, 0.7), "7022": (8000, True, 0.0),
    "4619": (20000, True, 0.1), "5510": (12000, True, 0.3), "6201": (10000, True, 0.0),
    "8690": (7000, False, 0.0), "4778": (5000, True, 0.4), "9200": (16000, False, 0.8),
    "0113": (11000, True, 0.2), "4730": (14000, True, 0.4), "8121": (4000, True, 0.3),
}

MCC_BY_SECTOR: dict[str, str] = {
    "4711": "5411", "5610": "5812", "4511": "5511", "6419": "6012", "6820": "6513", "4120": "1520",
    "4941": "4214", "9602": "7230", "7022": "8999", "4619": "5099", "5510": "7011", "6201": "7372",
    "8690": "8099", "4778": "5999", "9200": "7995", "0113": "5193", "4730": "5541", "8121": "7349",
}

BANKS_NL = ("RABO", "INGB", "ABNA", "SNSB", "TRIO", "KNAB", "BUNQ", "ASNB", "RBRB")
BIC_BY_COUNTRY: dict[str, tuple[str, ...]] = {
    "Netherlands": ("RABONL2U", "INGBNL2A", "ABNANL2A", "SNSBNL2A", "TRIONL2U", "KNABNL2H", "BUNQNL2A"),
    "Belgium": ("GEBABEBB", "KREDBEBB", "BBRUBEBB"), "Germany": ("DEUTDEDB", "COBADEFF", "WELADED1"),
    "France": ("BNPAFRPP", "SOGEFRPP"), "Spain": ("BSCHESMM", "CAIXESBB"), "Poland": ("PKOPPLPW",),
    "Bulgaria": ("UNCRBGSF",), "Cyprus": ("BCYPCY2N", "HEBACY2N"), "Luxembourg": ("BCEELULL",),
    "Romania": ("BTRLRO22",), "United Kingdom": ("BARCGB22", "HBUKGB4B"), "Switzerland": ("UBSWCHZH",),
    "Turkey": ("TGBATRIS",), "Morocco": ("BCMAMAMC",), "Nigeria": ("ZEIBNGLA",),
    "United Arab Emirates": ("NBADAEAA", "EBILAEAD"), "Hong Kong": ("HSBCHKHH",), "China": ("BKCHCNBJ",),
    "United States": ("CHASUS33", "CITIUS33"), "Suriname": ("DSBBSRPA",), "Curacao": ("MCBKCWCU",),
    "Panama": ("BAGEPAPA",), "Cayman Islands": ("CAYBKYKY",),
}

PLACE = "place"
COUNTRY_LEVELS: list[Mapping[str, str]] = [COUNTRIES]


def place_levels() -> list[Mapping[str, str]]:
    """The shipped city -> province -> country mapping, as the chain of child -> parent maps."""
    return [{c: p for c, (p, _, _, _) in CITIES.items()}, {p: k for _, (p, k, _, _) in CITIES.items()}]


@dataclass(frozen=True)
class Attribute:
    """One attribute of F: its name, type (date, number, string, place), hierarchy spec and meaning."""

    name: str
    kind: str
    hierarchy: object
    description: str


def _attributes() -> tuple[Attribute, ...]:
    city, country = place_levels(), COUNTRY_LEVELS
    a = Attribute
    return (
        a("subject_city", PLACE, city, "city of the subject's home"),
        a("transaction_date", "date", "date", "day of the reported transaction, 2019-2020"),
        a("subject_gender", "string", "mask", "M, F or X"),
        a("subject_age", "number", "intervals:5,10,20,40", "subject's age in years on the transaction date"),
        a("counterparty_country", PLACE, country, "country of the counterparty's bank"),
        a("subject_sbi", "string", "mask", "SBI code of the subject's sector of activity"),
        a("risk_score", "number", "decimal", "the bank's risk score of the transaction, 0-100"),
        a("report_date", "date", "date", "day the report was filed (after the transaction)"),
        a("counterparty_city", PLACE, city, "city of the counterparty (empty when unknown)"),
        a("subject_postcode", "string", "mask", "postcode of the subject's home (Dutch 1234AB style)"),
        a("amount", "number", "decimal", "amount of the transaction in whole euros"),
        a("account_opened", "date", "date", "day the subject's account was opened"),
        a("counterparty_bic", "string", "mask", "BIC of the counterparty's bank (bank, country, place)"),
        a("transactions_month", "number", "decimal", "number of transactions on the account that month"),
        a("subject_birth_date", "date", "date", "subject's date of birth"),
        a("counterparty_postcode", "string", "mask", "postcode of the counterparty (empty when unknown)"),
        a("transaction_hour", "number", "decimal", "hour of day of the transaction, 0-23"),
        a("vat_amount", "number", "decimal", "VAT included in the amount, euros (0 when not VAT-liable)"),
        a("fee", "number", "decimal", "bank fee charged on the transaction, euros"),
        a("employees", "number", "decimal", "employees of the subject's business (empty: no business)"),
        a("annual_revenue", "number", "decimal", "declared annual revenue of the business, euros"),
        a("company_founded", "date", "date", "day the business was registered (empty: no business)"),
        a("kvk_number", "string", "mask", "chamber-of-commerce number of the business (empty: none)"),
        a("last_login_date", "date", "date", "last online-banking login before the report"),
        a("cash_deposits", "number", "decimal", "cash deposited in the 90 days before, euros"),
        a("foreign_transfers", "number", "decimal", "transfers abroad in the 90 days before"),
        a("subject_nationality", PLACE, country, "subject's nationality"),
        a("branch_city", PLACE, city, "city of the subject's bank branch"),
        a("atm_city", PLACE, city, "city of the last cash withdrawal (empty: none)"),
        a("invoice_number", "string", "mask", "number of the invoice the transaction refers to (empty: none)"),
        a("vehicle_plate", "string", "mask", "licence plate of the subject's registered vehicle (empty: none)"),
        a("previous_reports", "number", "decimal", "earlier reports about the subject"),
        a("loan_amount", "number", "decimal", "outstanding loan, euros (empty: none)"),
        a("loan_start_date", "date", "date", "start of the loan (empty: none)"),
        a("mortgage_city", PLACE, city, "city of the mortgaged property (empty: none)"),
        a("tax_office", PLACE, city, "city of the subject's tax office"),
        a("audit_date", "date", "date", "day of the last tax audit (empty: never audited)"),
        a("declared_income", "number", "decimal", "income declared for the year before, euros"),
        a("tax_due", "number", "decimal", "income tax assessed for that year, euros"),
        a("refund_claimed", "number", "decimal", "VAT or income-tax refund claimed that year, euros"),
        a("accountant_postcode", "string", "mask", "postcode of the subject's accountant (empty: none)"),
        a("subject_bank", "string", "mask", "bank code of the subject's IBAN"),
        a("phone_area", "string", "mask", "area code of the subject's landline or 06 for mobile"),
        a("merchant_category", "string", "mask", "merchant category code (MCC) of the counterparty"),
        a("account_balance", "number", "decimal", "balance after the transaction, euros (may be negative)"),
        a("cash_withdrawals", "number", "decimal", "cash withdrawn in the 90 days before, euros"),
        a("fraud_label", "string", "mask", "Y if the report was confirmed as fraud, else N"),
    )


ATTRIBUTES: tuple[Attribute, ...] = _attributes()
assert len(ATTRIBUTES) == 47


@dataclass(frozen=True, eq=False)
class FraudDataset:
    """The generated table (identifier `record_id` first, then the 47 attributes in `ATTRIBUTES` order) and
    the hierarchy spec of each attribute (a kgen.io.hierarchies spec: builder name or mapping chain)."""

    table: Table
    hierarchies: dict[str, object]
    seed: int

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(a.name for a in ATTRIBUTES)

    def hierarchy(self, column: str) -> Hierarchy:
        """The validated hierarchy of an attribute, missing values included (as kgen would build it)."""
        values = [v for v in self.table.column(column)]
        token = MISSING if MISSING in values else None
        distinct = sorted({v for v in values if v != MISSING})
        hierarchy, _ = hierarchy_specs.resolve(column, distinct, token, self.hierarchies[column], None)
        return hierarchy

    def write(self, folder: str | os.PathLike, name: str = "fraud") -> list[Path]:
        """Write `<name>.csv` (comma-separated, empty = missing) and one ARX hierarchy file per attribute,
        `<name>_hierarchy_<attribute>.csv` (one row per raw value, quoted where needed). Returns the paths."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / f"{name}.csv"
        write_atomic(data, format_csv(self.table.columns, self.table.rows()))
        paths = [data]
        for attribute in ATTRIBUTES:
            hierarchy = self.hierarchy(attribute.name)
            path = folder / f"{name}_hierarchy_{attribute.name}.csv"
            # the missing value (empty) is left out: kgen adds it to a hierarchy read from a file (missing stays
            # itself below the top), and an ARX file cannot label it with empty fields
            rows = (hierarchy.paths[v] for v in sorted(hierarchy.paths) if v != MISSING)
            write_atomic(path, _arx_text(rows))
            paths.append(path)
        return paths


def _arx_text(rows: Iterable[Sequence[str]]) -> str:
    """ARX hierarchy text, `,`-separated: interval labels such as `[100, 109]` contain commas, so they are
    quoted, and a reader that guesses the separator from the first line cannot mistake it for `;`."""
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=",", lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def _day(start: dt.date, end: dt.date, rng: random.Random) -> dt.date:
    """A uniform day in [start, end] (just `end` when start is later)."""
    start = min(start, end)
    return start + dt.timedelta(days=rng.randint(0, (end - start).days))


def _clip(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def _weighted(rng: random.Random, weights: Mapping[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def _postcode(city: str, rng: random.Random) -> str:
    """A postcode in the city's range, in its country's style; empty where the country has none here."""
    _, country, (low, high), _ = CITIES[city]
    if high == 0:
        return MISSING
    digits = rng.randint(low, high)
    if country == "Netherlands":
        return f"{digits:04d}{rng.choice('ABCDEGHJKLMNPRST')}{rng.choice('ABCDEGHJKLMNPRSTVWXZ')}"
    return f"{digits:05d}" if country in ("Germany", "France") else f"{digits}"


def _home_weights() -> dict[str, float]:
    """Where subjects live: mostly West-Brabant and Zeeland, the taskforce's own region."""
    weights = {}
    for city, (province, country, _, _) in CITIES.items():
        if country != "Netherlands":
            weights[city] = 0.15 if country == "Belgium" else 0.0
        elif province in ("Noord-Brabant", "Zeeland"):
            weights[city] = 6.0 if city in ("Breda", "Bergen op Zoom", "Roosendaal", "Tilburg") else 3.0
        else:
            weights[city] = 0.8
    return weights


def _near(city: str, same_city: float, rng: random.Random, cities: Sequence[str]) -> str:
    """A city near `city`: itself with probability `same_city`, else one of its province (or any city)."""
    if rng.random() < same_city:
        return city
    province = CITIES[city][0]
    local = [c for c in cities if CITIES[c][0] == province]
    return rng.choice(local if local and rng.random() < 0.7 else list(cities))


def _tax_office(city: str) -> str:
    """Each province is served by one tax office city (the first of its cities above)."""
    province = CITIES[city][0]
    return next(c for c in CITIES if CITIES[c][0] == province)


def generate(seed: int = 0, rows: int = ROWS) -> FraudDataset:
    """Generate F deterministically from `seed`: `rows` reports (default 1,599), 47 attributes.

    Each report is drawn in steps, each a slice of one fixed sequence of draws from the one `rng`: the latent
    subject first, then its attributes. The order of the draws is part of the format (a seed must keep
    giving the same table), so a step may be renamed or split, but its draws never moved.
    """
    rng = random.Random(seed)
    dutch = [c for c in CITIES if CITIES[c][1] == "Netherlands"]
    nearby = [c for c in CITIES if CITIES[c][1] in ("Netherlands", "Belgium", "Germany")]
    home_weights = _home_weights()
    columns: dict[str, list[str]] = {IDENTIFIER: []} | {a.name: [] for a in ATTRIBUTES}
    for number in range(1, rows + 1):
        subject = _subject(rng, home_weights, dutch)
        fields, amount, opened, report = _transaction_fields(rng, subject)
        fields |= _contact_fields(rng, subject, amount)
        fields |= _business_fields(rng, subject, report)
        fields |= _personal_fields(rng, subject, dutch, nearby)
        fields |= _loan_and_tax_fields(rng, subject, dutch, opened, report)
        fields |= _bank_fields(rng, subject, amount)
        fields[IDENTIFIER] = f"R{seed:02d}-{number:05d}"
        assert len(fields) == len(columns)  # every column gets one value per report
        for name, value in fields.items():
            columns[name].append(MISSING if value is None else str(value))
    table = Table(tuple(columns), columns, None, ",")
    return FraudDataset(table, {a.name: a.hierarchy for a in ATTRIBUTES}, seed)


@dataclass(frozen=True)
class _Subject:
    """The latent variables of one report (see the module's docstring): every attribute hangs off them."""

    fraud: bool
    home: str
    wealth: float
    tx_date: dt.date
    birth: dt.date
    age: int
    sector: str
    business: bool
    abroad: bool
    cp_country: str
    cp_city: str | None


def _subject(rng: random.Random, home_weights: Mapping[str, float], dutch: Sequence[str]) -> _Subject:
    """Draw the subject of one report: fraud or not, home, wealth, transaction day, age, sector, business and
    the counterparty (fraud goes abroad and to high-risk places more often)."""
    fraud = rng.random() < 0.27
    home = _weighted(rng, home_weights)
    wealth = rng.lognormvariate(0.0, 0.6)
    tx_date = _day(dt.date(2019, 1, 1), dt.date(2020, 12, 31), rng)
    if tx_date.weekday() >= 5 and rng.random() < 0.6:  # fewer reported transactions at weekends
        tx_date -= dt.timedelta(days=tx_date.weekday() - 4)
    age_years = _clip(rng.gauss(47 if not fraud else 39, 14), 18, 92)
    birth = tx_date - dt.timedelta(days=int(age_years * 365.25) + rng.randint(0, 364))
    age = tx_date.year - birth.year - ((tx_date.month, tx_date.day) < (birth.month, birth.day))
    sector = rng.choice(list(SECTORS))
    business = rng.random() < (0.65 if fraud else 0.4)
    abroad = rng.random() < (0.45 if fraud else 0.12)
    if abroad:
        far = {k: (3.0 if r == "EU" else 1.0) * (2.5 if fraud and r != "EU" else 1.0)
               for k, r in COUNTRIES.items() if k != "Netherlands"}
        cp_country = _weighted(rng, far)
        options = [c for c in CITIES if CITIES[c][1] == cp_country]
        cp_city = rng.choice(options) if options and rng.random() < 0.8 else None
    else:
        cp_city = _near(home, 0.35, rng, dutch) if rng.random() < 0.93 else None
        cp_country = "Netherlands"
    return _Subject(fraud, home, wealth, tx_date, birth, age, sector, business, abroad, cp_country, cp_city)


def _transaction_fields(rng: random.Random, s: _Subject) -> tuple[dict[str, object], int, dt.date, dt.date]:
    """The transaction, the subject's home and account, the risk score, the counterparty's bank and the report
    day; also the amount, the account's opening day and the report day, which later attributes follow."""
    fields: dict[str, object] = {"transaction_date": s.tx_date.isoformat()}
    scale = SECTORS[s.sector][0] * s.wealth * (3.5 if s.fraud else 1.0)
    amount = int(_clip(rng.lognormvariate(math.log(scale / 4), 1.0), 5, 950_000))
    if rng.random() < 0.15:  # round amounts are a classic red flag
        amount = max(100, round(amount, -2))
    fields |= {"amount": amount, "subject_postcode": _postcode(s.home, rng), "subject_city": s.home,
               "subject_birth_date": s.birth.isoformat(), "subject_age": s.age, "counterparty_city": s.cp_city,
               "subject_sbi": s.sector}
    opened = _day(max(s.birth + dt.timedelta(days=18 * 366), dt.date(1985, 1, 1)), s.tx_date, rng)
    if s.fraud and rng.random() < 0.4:  # money mules: accounts opened shortly before
        opened = s.tx_date - dt.timedelta(days=rng.randint(5, 200))
    fields["account_opened"] = opened.isoformat()
    risk = _clip(rng.gauss(68 if s.fraud else 35, 15) + (10 if s.abroad else 0), 0, 100)
    fields |= {"risk_score": int(risk), "counterparty_country": s.cp_country,
               "counterparty_bic": rng.choice(BIC_BY_COUNTRY[s.cp_country]) if rng.random() < 0.96 else None,
               "transactions_month": int(_clip(rng.lognormvariate(math.log(25 * (1.8 if s.business else 1)), 0.8),
                                               1, 999))}
    report = s.tx_date + dt.timedelta(days=min(120, int(rng.expovariate(1 / 18))))
    fields["report_date"] = report.isoformat()
    return fields, amount, opened, report


def _contact_fields(rng: random.Random, s: _Subject, amount: int) -> dict[str, object]:
    """Gender, the counterparty's postcode, the hour (fraud often at night), VAT and the bank's fee."""
    _, vat_liable, _ = SECTORS[s.sector]
    gender = "X" if rng.random() < 0.01 else ("M" if rng.random() < (0.7 if s.fraud else 0.52) else "F")
    postcode = _postcode(s.cp_city, rng) if s.cp_city else None
    hour = (int(rng.gauss(2, 2.5)) % 24 if s.fraud and rng.random() < 0.35
            else int(_clip(rng.gauss(13, 3.5), 6, 23)))
    return {"subject_gender": gender, "counterparty_postcode": postcode, "transaction_hour": hour,
            "vat_amount": round(amount * 21 / 121) if vat_liable and s.business else 0,
            "fee": int(_clip(amount * 0.15, 15, 2500)) if s.abroad else (int(_clip(amount * 0.01, 0, 500)))}


def _business_fields(rng: random.Random, s: _Subject, report: dt.date) -> dict[str, object]:
    """The subject's business (empty without one), the last login and the cash and transfers of 90 days."""
    turnover, _, cash_share = SECTORS[s.sector]
    business, fraud = s.business, s.fraud
    employees = int(_clip(rng.lognormvariate(math.log(3 * s.wealth), 1.1), 1, 2500)) if business else None
    revenue = int(turnover * 12 * (employees or 1) ** 0.8 * rng.lognormvariate(0, 0.4)) if business else None
    adult = s.birth + dt.timedelta(days=18 * 366)
    founded = _day(max(adult, dt.date(1980, 1, 1)), s.tx_date, rng) if business else None
    fields: dict[str, object] = {
        "employees": employees, "annual_revenue": revenue, "company_founded": founded.isoformat() if founded else None,
        "kvk_number": f"{rng.randint(10_000_000, 99_999_999)}" if business else None,
        "last_login_date": (report - dt.timedelta(days=int(rng.expovariate(1 / 6)))).isoformat()
        if rng.random() < 0.9 else None}
    cash = rng.random() < cash_share * (1.6 if fraud else 1.0)
    fields["cash_deposits"] = (int(rng.lognormvariate(math.log(turnover * (2 if fraud else 0.5)), 0.9)) if cash
                               else 0)
    fields["foreign_transfers"] = int(rng.expovariate(1 / (9 if fraud else 1.5))) + (1 if s.abroad else 0)
    return fields


def _personal_fields(rng: random.Random, s: _Subject, dutch: Sequence[str], nearby: Sequence[str]
                     ) -> dict[str, object]:
    """Nationality, the bank branch and last ATM, an invoice, a vehicle and earlier reports."""
    home, fraud = s.home, s.fraud
    nationality = "Netherlands" if rng.random() < (0.8 if not fraud else 0.62) else _weighted(
        rng, {k: (4.0 if k in ("Belgium", "Germany", "Turkey", "Morocco", "Poland", "Suriname") else 1.0)
              for k in COUNTRIES if k != "Netherlands"})
    branch = _near(home, 0.75, rng, dutch) if CITIES[home][1] == "Netherlands" else home
    atm = rng.random()
    atm_city = None if atm < 0.18 else (rng.choice(list(CITIES)) if fraud and atm > 0.85
                                        else _near(home, 0.6, rng, nearby))
    invoice = (f"F{s.tx_date.year % 100:02d}{rng.randint(0, 99999):05d}" if s.business and rng.random() < 0.8
               else None)
    plate = (f"{rng.randint(1, 99):02d}-{''.join(rng.choices('BDFGHJKLNPRSTXZ', k=3))}-{rng.randint(1, 9)}"
             if rng.random() < 0.7 else None)
    return {"subject_nationality": nationality, "branch_city": branch, "atm_city": atm_city,
            "invoice_number": invoice, "vehicle_plate": plate,
            "previous_reports": min(9, int(rng.expovariate(1 / (1.6 if fraud else 0.4))))}


def _loan_and_tax_fields(rng: random.Random, s: _Subject, dutch: Sequence[str], opened: dt.date,
                         report: dt.date) -> dict[str, object]:
    """Loan and mortgage, the tax office and audit, declared income (fraud under-declares), tax, refund and
    the accountant."""
    home, fraud = s.home, s.fraud
    loan = rng.random() < 0.45
    fields: dict[str, object] = {
        "loan_amount": int(rng.lognormvariate(math.log(60_000 * s.wealth), 0.9)) if loan else None}
    loan_start = _day(max(opened, dt.date(2000, 1, 1)), s.tx_date, rng) if loan else None
    fields["loan_start_date"] = loan_start.isoformat() if loan_start else None
    fields["mortgage_city"] = _near(home, 0.85, rng, dutch) if rng.random() < 0.55 else None
    fields["tax_office"] = _tax_office(home)
    audit = rng.random() < (0.55 if fraud else 0.25)
    fields["audit_date"] = _day(dt.date(2010, 1, 1), report, rng).isoformat() if audit else None
    hump = math.exp(-((s.age - 52) / 22) ** 2)
    income = int(_clip(rng.lognormvariate(math.log(24_000 + 40_000 * hump * s.wealth), 0.45), 0, 5_000_000))
    if fraud and rng.random() < 0.5:  # under-declaring
        income = int(income * rng.uniform(0.2, 0.6))
    fields["declared_income"] = income
    tax = 0.0 if income < 10_000 else 0.37 * (min(income, 68_000) - 10_000) + 0.495 * max(0, income - 68_000)
    fields["tax_due"] = int(tax * rng.uniform(0.9, 1.05))
    refund = rng.random() < (0.6 if fraud else 0.3)
    fields["refund_claimed"] = int(rng.lognormvariate(math.log(1500 * (4 if fraud else 1)), 1.0)) if refund else 0
    fields["accountant_postcode"] = (_postcode(_near(home, 0.5, rng, dutch), rng)
                                     if s.business or rng.random() < 0.2 else None)
    return fields


def _bank_fields(rng: random.Random, s: _Subject, amount: int) -> dict[str, object]:
    """The subject's bank and phone, the merchant category, the balance after the transaction and cash
    withdrawn, and the label."""
    home, fraud = s.home, s.fraud
    bank = rng.choice(BANKS_NL if CITIES[home][1] == "Netherlands" else ("RABO", "INGB"))
    phone = "06" if rng.random() < 0.55 else CITIES[home][3]
    mcc = MCC_BY_SECTOR[s.sector] if rng.random() < 0.6 else rng.choice(list(MCC_BY_SECTOR.values()))
    balance = int(rng.gauss(2500 * s.wealth, 4000 * s.wealth)) - (amount // 3 if fraud else 0)
    withdrawals = int(rng.lognormvariate(math.log(800 * (5 if fraud else 1)), 1.0)) if rng.random() < 0.7 else 0
    return {"subject_bank": bank, "phone_area": phone, "merchant_category": mcc, "account_balance": balance,
            "cash_withdrawals": withdrawals, "fraud_label": "Y" if fraud else "N"}


def describe() -> list[tuple[str, str, str, str]]:
    """(name, type, hierarchy, description) per attribute, for the documentation."""
    def spec(value: object) -> str:
        if isinstance(value, list):
            return "mapping city -> province -> country" if len(value) == 2 else "mapping country -> region"
        return str(value)

    return [(a.name, a.kind, spec(a.hierarchy), a.description) for a in ATTRIBUTES]

