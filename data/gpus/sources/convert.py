#!/usr/bin/env python3
"""Regenerates migsched's GPU catalog (data/gpus/*.json) from the research data files.

Input:  data/gpus/sources/mig-profiles.research.json (the research table; its `gpus[]` models are
        converted as they are) and data/gpus/sources/inferred-models.json (our own table of the
        models whose placements no driver listing confirms; it extends the research file's
        `unconfirmed[]` entries or stands alone, docs/mig-hardware.md section 3).
Output: one file per model in data/gpus/, format "migsched-gpu-model/1"
        (docs/formats/catalog.md).

Usage:
  python3 data/gpus/sources/convert.py            # rewrite the files
  python3 data/gpus/sources/convert.py --check    # exit 1 if a file would change

Standard library only. The output is deterministic: the same input gives byte-identical files.
Facts that are not in the research file (short names, PCIe bandwidth, power, driver-default
order, static layouts) come from the tables below; each carries its source in the model's `notes`.
"""

import argparse
import json
import os
import re
import sys

SCHEMA = "migsched-gpu-model/1"
HERE = os.path.dirname(os.path.abspath(__file__))

# PCIe bandwidth per GPU (docs/algorithms.md §8), GB/s.
PCIE4_MEASURED = 30.08  # A100 PCIe 4.0, measured (HPCAsia'25)
PCIE5_ASSUMED = 55.0  # PCIe 5.0, assumption
C2C_ASSUMED = 450.0  # NVLink-C2C to the Grace CPU, 900 GB/s both directions: 450 per direction

PCIE5_NOTE = "pcie_max_gbps: assumption. PCIe 5.0, about 55 GB/s (docs/algorithms.md §8)."
C2C_NOTE = (
    "pcie_max_gbps: assumption. The GPU reaches host memory over NVLink-C2C to its Grace CPU "
    "(900 GB/s for both directions together), not over PCIe: 450 GB/s per direction is used "
    "(docs/algorithms.md §8)."
)
NO_POWER_NOTE = (
    "power: not given. This GPU exists only as an SXM module or a Grace superchip, whose power "
    "limit is not comparable with the PCIe cards' board power the other models use "
    "(docs/formats/catalog.md `power`); energy is not estimated for a cluster holding it. Add "
    "a `power` entry with --catalog to estimate it."
)

# Power model of the energy estimate (docs/formats/catalog.md `power`, src/sim/energy.h): max_w is
# the board power limit of the PCIe card (the form factor of the node the paper measured), idle_w an
# assumption; per_active_slice_w is left to the loader: (max_w - idle_w) / compute_slices.
POWER_MODEL_NOTE = (
    " Energy model (assumption): idle_w always, plus (max_w - idle_w) / compute_slices per busy "
    "compute slice, so a fully busy GPU draws its board limit."
)

# Research `model` string -> what the research file does not say. Every model of gpus[] must be
# listed here and nothing else (the converter fails otherwise, so a new model is not skipped).
MODELS = {
    "A30 24GB": {
        "file": "a30-24gb.json",
        "evidence": "observed: nvidia-smi mig -lgipp on an NVIDIA A30 (driver 535.183.01) and in a second A30 transcript (docs/mig-hardware.md §2.1)",
        "short_names": ["A30-24GB", "A30"],
        "pcie_max_gbps": PCIE4_MEASURED,
        "power": {"idle_w": 30, "max_w": 165},
        "power_note": "max_w: 165 W, the A30 board power (NVIDIA A30 product brief). idle_w: "
        "assumption (about 30 W; measure with nvidia-smi --query-gpu=power.draw on the idle "
        "card).",
        "pcie_note": "pcie_max_gbps: assumption. A30 has a PCIe 4.0 x16 host link; the A100 PCIe "
        "4.0 measurement (30.08 GB/s, docs/algorithms.md §8) is used.",
    },
    "A100 40GB (SXM4 / PCIe)": {
        "file": "a100-40gb.json",
        "evidence": "observed: nvidia-smi mig -lgipp in NVIDIA's MIG user guide, on an A100 40GB (docs/mig-hardware.md §2.2)",
        "short_names": ["A100-40GB"],
        "pcie_max_gbps": PCIE4_MEASURED,
        "power": {"idle_w": 35, "max_w": 250},
        "power_note": "max_w: 250 W, the A100 40GB PCIe board power (NVIDIA A100 40GB PCIe product "
        "brief PB-10137-001; the SXM4 module is 400 W): the PCIe card of the measured node "
        "(docs/algorithms.md §8). idle_w: assumption (about 35 W; measure with nvidia-smi "
        "--query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: 30.08 GB/s measured on A100 PCIe 4.0 (docs/algorithms.md §8); "
        "used for the SXM4 board too (PCIe 4.0 host link, assumption).",
    },
    "A100 80GB (SXM4 / PCIe)": {
        "file": "a100-80gb.json",
        "evidence": "observed: nvidia-smi mig -lgipp on A100 80GB for the profiles with IDs 19/20/14/9/5/0; 1g.20gb (ID 15) is taken from A100 40GB and H100, the same GA100 geometry, and was not seen on an 80GB card (docs/mig-hardware.md §2.3)",
        "short_names": ["A100-80GB"],
        "pcie_max_gbps": PCIE4_MEASURED,
        "power": {"idle_w": 40, "max_w": 300},
        "power_note": "max_w: 300 W, the A100 80GB PCIe board power (NVIDIA A100 80GB PCIe product "
        "brief PB-10577-001; the SXM4 module is 400 W). idle_w: assumption (about 40 W; measure "
        "with nvidia-smi --query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: assumption. The A100 40GB PCIe 4.0 measurement (30.08 GB/s, "
        "docs/algorithms.md §8) is used; A100 80GB has the same PCIe 4.0 host link.",
    },
    "H100 80GB (SXM5 / PCIe)": {
        "file": "h100-80gb.json",
        "evidence": "observed: nvidia-smi mig -lgipp on an NVIDIA H100 80GB HBM3, in two transcripts (docs/mig-hardware.md §2.4)",
        "short_names": ["H100-80GB"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "power": {"idle_w": 50, "max_w": 350},
        "power_note": "max_w: 350 W, the H100 PCIe board power (NVIDIA H100 PCIe product brief; "
        "the SXM5 module is up to 700 W). idle_w: assumption (about 50 W; measure with "
        "nvidia-smi --query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: assumption. PCIe 5.0, about 55 GB/s (docs/algorithms.md §8).",
    },
    "H100 NVL 94GB (H100 94GB PCIe/SXM5 per MIG UG)": {
        "file": "h100-nvl-94gb.json",
        "evidence": "observed: nvidia-smi mig -lgipp on an NVIDIA H100 NVL, driver 560.35.03 (docs/mig-hardware.md §2.5)",
        "short_names": ["H100-NVL-94GB", "H100-94GB"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "power": {"idle_w": 60, "max_w": 400},
        "power_note": "max_w: 400 W, the upper end of the H100 NVL board power (350-400 W "
        "configurable, NVIDIA H100 NVL product brief). idle_w: assumption (about 60 W; measure "
        "with nvidia-smi --query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: assumption. PCIe 5.0, about 55 GB/s (docs/algorithms.md §8).",
    },
    "H200 141GB (SXM5) / H200 NVL": {
        "file": "h200-141gb.json",
        "evidence": "inferred from H100 80GB: the same GH100 die, profile IDs 19/20/15/14/9/5/0, memory fractions and instance counts (nvidia-smi mig -lgip posted by NVIDIA in https://github.com/NVIDIA/mig-parted/issues/120); no -lgipp listing found (docs/mig-hardware.md §3.1)",
        "short_names": ["H200-141GB", "H200"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "power": {"idle_w": 60, "max_w": 600},
        "power_note": "max_w: 600 W, the H200 NVL (PCIe) maximum board power (NVIDIA H200 NVL "
        "specifications; the SXM5 module is up to 700 W). idle_w: assumption (about 60 W; "
        "measure with nvidia-smi --query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: assumption. PCIe 5.0, about 55 GB/s (docs/algorithms.md §8).",
    },
    "RTX PRO 6000 Blackwell (96GB)": {
        "file": "rtx-pro-6000.json",
        "evidence": "observed: nvidia-smi mig -lgipp and -lgi on one RTX PRO 6000 Blackwell Server Edition (a single transcript; the Workstation and Max-Q editions were not observed) (docs/mig-hardware.md §2.6)",
        "short_names": ["RTX-PRO-6000"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "power": {"idle_w": 30, "max_w": 600},
        "power_note": "max_w: 600 W, the RTX PRO 6000 Blackwell maximum board power (Workstation "
        "and Server Editions, up to 600 W; the Max-Q edition is 300 W). idle_w: assumption "
        "(about 30 W; measure with nvidia-smi --query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: assumption. RTX PRO 6000 Blackwell has a PCIe 5.0 x16 host "
        "link; the H100/H200 figure (about 55 GB/s, docs/algorithms.md §8) is used.",
        # The driver README's supported-GPU table also lists the Workstation (0x2BB1) and Max-Q
        # (0x2BB4) editions, whose names are already aliases; the research file has the Server
        # Edition's id only.
        "pci_extra": ["0x2BB110DE", "0x2BB410DE"],
    },
    # ---- inferred-models.json (placements not confirmed by a driver listing) ----
    "GH200 96GB": {
        "file": "gh200-96gb.json",
        "short_names": ["GH200-96GB", "GH200"],
        "pcie_max_gbps": C2C_ASSUMED,
        "pcie_note": C2C_NOTE,
    },
    "GH200 144GB": {
        "file": "gh200-144gb.json",
        "short_names": ["GH200-144GB"],
        "pcie_max_gbps": C2C_ASSUMED,
        "pcie_note": C2C_NOTE,
    },
    "H20 96GB": {
        "file": "h20-96gb.json",
        "short_names": ["H20-96GB", "H20"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "pcie_note": PCIE5_NOTE,
    },
    "B200 180GB": {
        "file": "b200-180gb.json",
        "short_names": ["B200-180GB", "B200"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "pcie_note": "pcie_max_gbps: assumption. B200 has a PCIe 5.0 x16 host link; about 55 GB/s "
        "(docs/algorithms.md §8).",
    },
    "GB200 186GB": {
        "file": "gb200-186gb.json",
        "short_names": ["GB200-186GB", "GB200"],
        "pcie_max_gbps": C2C_ASSUMED,
        "pcie_note": C2C_NOTE,
    },
    "B300 269GB": {
        "file": "b300-269gb.json",
        "short_names": ["B300-269GB", "B300"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "pcie_note": "pcie_max_gbps: assumption. B300's own endpoint is PCIe 6.0 x16, but HGX "
        "B300 hosts link it at PCIe 5.0; about 55 GB/s (docs/algorithms.md §8).",
    },
    "GB300 278GB": {
        "file": "gb300-278gb.json",
        "short_names": ["GB300-278GB", "GB300"],
        "pcie_max_gbps": C2C_ASSUMED,
        "pcie_note": C2C_NOTE,
    },
    "RTX PRO 5000 Blackwell 48GB": {
        "file": "rtx-pro-5000.json",
        "short_names": ["RTX-PRO-5000"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "power": {"idle_w": 25, "max_w": 300},
        "power_note": "max_w: 300 W, the RTX PRO 5000 Blackwell maximum power consumption (NVIDIA "
        "RTX PRO 5000 Blackwell product page). idle_w: assumption (about 25 W; measure with "
        "nvidia-smi --query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: assumption. PCIe 5.0 x16 host link; about 55 GB/s "
        "(docs/algorithms.md §8).",
    },
    "RTX PRO 4500 Blackwell 32GB": {
        "file": "rtx-pro-4500.json",
        "short_names": ["RTX-PRO-4500"],
        "pcie_max_gbps": PCIE5_ASSUMED,
        "power": {"idle_w": 20, "max_w": 200},
        "power_note": "max_w: 200 W, the RTX PRO 4500 Blackwell maximum power consumption (NVIDIA "
        "RTX PRO 4500 Blackwell product page). idle_w: assumption (about 20 W; measure with "
        "nvidia-smi --query-gpu=power.draw on the idle card).",
        "pcie_note": "pcie_max_gbps: assumption. PCIe 5.0 x16 host link; about 55 GB/s "
        "(docs/algorithms.md §8).",
    },
}

# Models on which the driver-default order was observed (docs/mig-hardware.md §6); on the others of
# the same grid it is applied by analogy.
DRIVER_DEFAULT_OBSERVED = {
    "A30 24GB": "observed: -cgi 14, 14, 5 on an empty A30 gave 0:1, 1:1, 2:2 (lowest first)",
    "A100 40GB (SXM4 / PCIe)": "observed: MIG UG examples (2g at 4:2, then 1g at 6, 0, 1, 2, 3)",
    "H100 80GB (SXM5 / PCIe)": "observed: -cgi 19 x7 on an empty H100 80GB HBM3 gave 6, 4, 5, 0, "
    "1, 2, 3",
    "RTX PRO 6000 Blackwell (96GB)": "observed: -cgi 1g.24gb x4 gave 0:3, 3:3, 6:3, 9:3 and "
    "2g.48gb,1g.24gb,1g.24gb gave 0:6, 6:3, 9:3 (lowest first)",
}

# Driver order of the 1g profile with 7 size-1 placements on 8-unit A100/H100-class GPUs
# (docs/mig-hardware.md §6, docs/algorithms.md §11).
ONE_G_ORDER = [6, 4, 5, 0, 1, 2, 3]

VARIANT_SUFFIX = re.compile(r"^(?P<base>.+?)(?P<suffix>\+me\.all|\+me|-me|\+gfx)$")


def fail(msg):
    sys.exit(f"convert.py: {msg}")


def canonical_name(model):
    """'A100 40GB (SXM4 / PCIe)' -> 'A100 40GB'; 'RTX PRO 6000 Blackwell (96GB)' ->
    'RTX PRO 6000 Blackwell 96GB'; 'H200 141GB (SXM5) / H200 NVL' -> 'H200 141GB'.

    A parenthesis holding only a memory size is kept (without the parentheses); any other
    parenthesis (form factors, remarks) and any ' / other product' tail is dropped."""

    def paren(m):
        inner = m.group(1).strip()
        return " " + inner if re.fullmatch(r"\d+GB", inner) else ""

    name = re.sub(r"\s*\(([^)]*)\)", paren, model)
    name = name.split(" / ")[0]
    return " ".join(name.split())


def variant_base(name):
    m = VARIANT_SUFFIX.match(name)
    return m.group("base") if m else None


def size_of(profile):
    return profile["placements"][0]["size"]


def starts_of(profile):
    return [p["start"] for p in profile["placements"]]


def units(profile, start):
    return set(range(start, start + size_of(profile)))


def convert_profile(p, names):
    out = {
        "name": p["name"],
        "id": p["id"],
        "nvml_profile_index": p["nvml_profile_index"],
        "compute_slices": p["compute_slices"],
        "memory_slices": p["memory_slices"],
        "memory_mib": p["memory_mib"],
        "max_instances": p["max_instances"],
        "placements": [{"start": x["start"], "size": x["size"]} for x in p["placements"]],
    }
    base = variant_base(p["name"])
    if base is not None:
        if base not in names:
            fail(f"profile {p['name']}: base profile {base} not in the model")
        out["variant_of"] = base
    if p.get("evidence"):
        out["notes"] = [p["evidence"]]
    return out


def base_profile(bases, compute_slices, size=None):
    found = [
        p
        for p in bases
        if p["compute_slices"] == compute_slices and (size is None or size_of(p) == size)
    ]
    if len(found) != 1:
        fail(f"expected one base profile with {compute_slices} compute slices, found {len(found)}")
    return found[0]


def all_balanced(model, bases):
    """mig-parted's all-balanced layout (deployments/systemd/config-default.yaml): on 7-slice
    models 1x3g + 1x2g + 2x1g, on 4-slice models 1x2g + 2x1g; on 2-slice models (for which
    mig-parted defines none) ours: 2x1g. Placed greedily (3g at its highest start, the others at
    their lowest free start) and listed by start."""
    if model["compute_slices"] == 7:
        wanted = [(base_profile(bases, 3), "high"), (base_profile(bases, 2), "low")]
        wanted += [(base_profile(bases, 1, size=1), "low")] * 2
    elif model["compute_slices"] in (4, 2):
        one_g = [p for p in bases if p["compute_slices"] == 1]
        if len(one_g) != 1:
            fail(f"{model['model']}: expected one base 1g profile")
        wanted = [(one_g[0], "low"), (one_g[0], "low")]
        if model["compute_slices"] == 4:
            wanted.insert(0, (base_profile(bases, 2), "low"))
    else:
        fail(f"{model['model']}: no all-balanced rule for {model['compute_slices']} slices")
    used = set()
    layout = []
    for prof, where in wanted:
        starts = starts_of(prof)
        if where == "high":
            starts = list(reversed(starts))
        start = next((s for s in starts if not (units(prof, s) & used)), None)
        if start is None:
            fail(f"{model['model']}: all-balanced does not fit ({prof['name']})")
        used |= units(prof, start)
        layout.append({"profile": prof["name"], "start": start})
    if sum(p["compute_slices"] for p, _ in wanted) != model["compute_slices"]:
        fail(f"{model['model']}: all-balanced does not use every compute slice")
    layout.sort(key=lambda x: x["start"])
    return layout


ALL_BALANCED_TEXT = {
    7: "NVIDIA mig-parted's all-balanced (1x3g + 1x2g + 2x1g)",
    4: "NVIDIA mig-parted's all-balanced (1x2g + 2x1g)",
    2: "ours (2x1g): mig-parted defines no all-balanced layout for 2-slice models",
}


def driver_default(model, bases):
    """Highest start first on the 8-unit, 7-slice class (A100/H100/H200), with the explicit
    order 6,4,5,0,1,2,3 for the size-1 1g; lowest first elsewhere (A30, RTX PRO 6000)."""
    if model["placement_units"] == 8 and model["compute_slices"] == 7:
        one_g = base_profile(bases, 1, size=1)
        if sorted(starts_of(one_g)) != sorted(ONE_G_ORDER):
            fail(f"{model['model']}: {one_g['name']} placements are not 0..6")
        return {"highest_first": True, "orders": {one_g["name"]: ONE_G_ORDER}}
    return {"highest_first": False, "orders": {}}


def driver_default_note(g):
    if g["model"] in DRIVER_DEFAULT_OBSERVED:
        return DRIVER_DEFAULT_OBSERVED[g["model"]]
    if g["placement_units"] == 8 and g["compute_slices"] == 7:
        return (
            "inferred: same 8-unit grid and profile IDs as A100 40GB / H100 80GB, where it was "
            "observed (docs/mig-hardware.md §6); assumption"
        )
    return (
        "inferred: lowest start first, as observed on A30 and RTX PRO 6000 "
        "(docs/mig-hardware.md §6); assumption"
    )


# ---- inferred-models.json ---------------------------------------------------------------------

# Profile fields an inferred model's entry may fill where the research file leaves them null (or
# must give when it stands alone).
PROFILE_FIELDS = ("id", "nvml_profile_index", "compute_slices", "memory_slices", "max_instances",
                  "memory_mib")
MODEL_FIELDS = ("compute_slices", "memory_slices", "placement_units")


def reference_placements(reference, compute_slices, memory_slices):
    """Placements of the base profile with these slices on a confirmed research model."""
    found = [
        p
        for p in reference["profiles"]
        if variant_base(p["name"]) is None
        and p["compute_slices"] == compute_slices
        and p["memory_slices"] == memory_slices
    ]
    if len(found) != 1:
        fail(
            f"{reference['model']}: expected one base profile with {compute_slices} compute and "
            f"{memory_slices} memory slices, found {len(found)}"
        )
    return [{"start": x["start"], "size": x["size"]} for x in found[0]["placements"]]


def inferred_entry(e, research):
    """A research-schema model (as in gpus[]) from one entry of inferred-models.json."""
    name = e["model"]
    if "research_unconfirmed" in e:
        base = [g for g in research["unconfirmed"] if g["model"] == e["research_unconfirmed"]]
        if len(base) != 1:
            fail(f"{name}: unconfirmed[] has no model '{e['research_unconfirmed']}'")
        base = base[0]
        g = {k: base[k] for k in ("aliases", "pci_device_ids", "source", "status") if k in base}
        g.update({k: base[k] for k in MODEL_FIELDS})
        profiles = [{k: p.get(k) for k in ("name",) + PROFILE_FIELDS} for p in base["profiles"]]
        for k in MODEL_FIELDS:
            if k in e and e[k] != base[k]:
                fail(f"{name}: '{k}' {e[k]} contradicts the research file ({base[k]})")
        missing = [i for i in g.get("pci_device_ids", []) if i not in e.get("pci_device_ids", [])]
        if missing:
            fail(f"{name}: pci_device_ids must keep the research file's {missing}")
        g["source"] = g["source"] + "; " + e["sources"]
        fills = {p["name"]: p for p in e.get("profiles", [])}
        for p in profiles:
            fill = fills.pop(p["name"], {})
            for k in PROFILE_FIELDS:
                if k not in fill:
                    continue
                if p[k] is not None:
                    fail(f"{name} {p['name']}: '{k}' is in the research file; do not override it")
                p[k] = fill[k]
            if fill.get("evidence"):
                p["evidence"] = fill["evidence"]
        if fills:
            fail(f"{name}: profiles {sorted(fills)} are not in the research file's entry")
    else:
        g = {k: e[k] for k in MODEL_FIELDS}
        g["source"] = e["sources"]
        profiles = [dict(p) for p in e["profiles"]]
    g["model"] = name
    if "aliases" in e:
        g["aliases"] = e["aliases"]
    g["pci_device_ids"] = e["pci_device_ids"]
    g["confirmed"] = False
    g["placements_evidence"] = e["placements_evidence"]
    reference = None
    if "placements_from" in e:
        reference = [x for x in research["gpus"] if x["model"] == e["placements_from"]]
        if len(reference) != 1 or not reference[0]["confirmed"]:
            fail(f"{name}: placements_from must name a confirmed model of gpus[]")
        reference = reference[0]
    by_name = {p["name"]: p for p in profiles}
    for p in profiles:
        for k in PROFILE_FIELDS:
            if p.get(k) is None:
                fail(f"{name} {p['name']}: '{k}' is unknown; give it (or -1 for an unknown id)")
        own = variant_base(p["name"])
        shape = by_name[own] if own is not None else p
        if own is not None and own not in by_name:
            fail(f"{name} {p['name']}: base profile {own} not in the model")
        if shape.get("placements") is None and reference is not None:
            shape["placements"] = reference_placements(
                reference, shape["compute_slices"], shape["memory_slices"]
            )
        if shape.get("placements") is None:
            fail(f"{name} {p['name']}: no placements and no placements_from")
        p["placements"] = shape["placements"]
    g["profiles"] = profiles
    return g


def convert_model(g):
    extra = MODELS[g["model"]]
    names = {p["name"] for p in g["profiles"]}
    profiles = [convert_profile(p, names) for p in g["profiles"]]
    for p in profiles:
        if not p["placements"]:
            fail(f"{g['model']} {p['name']}: no placements")
    bases = [p for p in profiles if "variant_of" not in p]
    dd = driver_default(g, bases)
    notes = [extra["pcie_note"]]
    if "power" in extra:
        notes.append("power: " + extra["power_note"] + POWER_MODEL_NOTE)
    else:
        notes.append(NO_POWER_NOTE)
    notes.append(f"driver_default: {driver_default_note(g)}.")
    notes.append(
        f"static_layouts.all-balanced: {ALL_BALANCED_TEXT[g['compute_slices']]}; starts chosen "
        "by convert.py (valid, non-overlapping)."
    )
    me_all = [p["name"] for p in profiles if p["name"].endswith("+me.all")]
    if me_all:
        notes.append(
            f"{', '.join(me_all)}: nvml.h says an instance of a +me.all profile prevents "
            "allocation of all but -me profiles (a GPU-wide constraint, docs/mig-hardware.md §4); "
            "placements alone do not express it."
        )
    if g.get("confidence"):
        notes.append(f"research confidence: {g['confidence']}.")
    for key in ("status", "note", "notes"):
        if g.get(key):
            notes.append(g[key])
    if not g["confirmed"]:
        notes.append("confirmed: false - placements inferred, not observed.")
    inferred = "placements_evidence" in g
    out = {
        "$comment": "Generated by data/gpus/sources/convert.py from "
        + ("inferred-models.json" if inferred else "mig-profiles.research.json")
        + "; edit the converter or its input, not this file.",
        "schema": SCHEMA,
        "name": canonical_name(g["model"]),
        "short_names": extra["short_names"],
        "aliases": list(g["aliases"]),
        "pci_device_ids": list(g.get("pci_device_ids", [])) + extra.get("pci_extra", []),
        "confirmed": bool(g["confirmed"]),
        "placements_evidence": g.get("placements_evidence", extra.get("evidence")),
        "compute_slices": g["compute_slices"],
        "memory_slices": g["memory_slices"],
        "placement_units": g["placement_units"],
        "pcie_max_gbps": extra["pcie_max_gbps"],
    }
    if not out["placements_evidence"]:
        fail(f"{g['model']}: no placements evidence (MODELS 'evidence')")
    if "power" in extra:
        out["power"] = dict(extra["power"])
    out.update(
        {
            "driver_default": dd,
            "static_layouts": {"all-balanced": all_balanced(g, bases)},
            "profiles": profiles,
            "source": g["source"]
            + " [converted by data/gpus/sources/convert.py from "
            + ("inferred-models.json and " if inferred else "")
            + "mig-profiles.research.json]",
            "notes": notes,
        }
    )
    return extra["file"], out


def is_leaf(v):
    """A list or object holding only scalars: printed on one line."""
    items = v.values() if isinstance(v, dict) else v
    return all(not isinstance(x, (dict, list)) for x in items)


def dump(v, indent=0):
    """json.dumps with indent 2, but short leaf containers (and lists of them) on one line."""
    pad = " " * indent
    one_line = json.dumps(v, ensure_ascii=False, separators=(", ", ": "))
    if not isinstance(v, (dict, list)) or not v:
        return one_line
    if len(one_line) + indent <= 100 and (
        is_leaf(v) or (isinstance(v, list) and all(isinstance(x, dict) and is_leaf(x) for x in v))
    ):
        return one_line
    inner = " " * (indent + 2)
    if isinstance(v, dict):
        parts = [f"{inner}{json.dumps(k)}: {dump(x, indent + 2)}" for k, x in v.items()]
        return "{\n" + ",\n".join(parts) + "\n" + pad + "}"
    parts = [inner + dump(x, indent + 2) for x in v]
    return "[\n" + ",\n".join(parts) + "\n" + pad + "]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=os.path.join(HERE, "mig-profiles.research.json"))
    ap.add_argument("--inferred", default=os.path.join(HERE, "inferred-models.json"))
    ap.add_argument("--out", default=os.path.dirname(HERE), help="default: data/gpus/")
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()

    with open(args.source, encoding="utf-8") as f:
        research = json.load(f)
    with open(args.inferred, encoding="utf-8") as f:
        inferred = json.load(f)
    entries = list(research["gpus"]) + [inferred_entry(e, research) for e in inferred["models"]]
    got = [g["model"] for g in entries]
    if sorted(got) != sorted(MODELS) or len(set(got)) != len(got):
        fail(f"models {sorted(got)} differ from the converter's table {sorted(MODELS)}")

    stale = []
    for g in entries:
        fname, model = convert_model(g)
        text = dump(model) + "\n"
        path = os.path.join(args.out, fname)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old == text:
            continue
        stale.append(path)
        if not args.check:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
    if args.check:
        if stale:
            print("out of date: " + ", ".join(stale), file=sys.stderr)
            return 1
        print(f"{len(got)} catalog files up to date")
        return 0
    print(f"wrote {len(stale)} of {len(got)} catalog files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
