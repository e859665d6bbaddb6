"""Files derived from the upstream originals, byte for byte as a data mirror holds them.

Each function reads the originals from a folder and returns ``{file name: contents}``; the
caller (``advi_repro.planning.datasets.fetch``) checks the sha256 of each and writes it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.io

STATE_ABBREVIATIONS = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO "
    "MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY"
).split()
"""USPS abbreviations of the 51 states in the data's order (alphabetical, DC inserted as 9)."""

STATE_REGIONS = (
    3, 4, 4, 3, 4, 4, 1, 1, 5, 3, 3, 4, 4, 2, 2, 2, 2, 3, 3, 1, 1, 1, 2, 2, 3, 2,
    4, 2, 4, 1, 1, 4, 1, 3, 2, 2, 3, 4, 1, 1, 3, 2, 3, 3, 4, 1, 3, 4, 1, 2, 4,
)
"""ARM's region vector (Gelman & Hill ch. 14): 1 Northeast, 2 Midwest, 3 South, 4 West, 5 DC."""

_RESPONDENT_COLUMNS = {
    "y": "y", "female": "female", "black": "black", "age": "age", "edu": "edu",
    "age_edu": "age_edu", "state": "state", "region": "region_full",
}


def election88(folder: Path) -> dict[str, bytes]:
    """``election88_full.csv`` and ``election88_states.csv`` from the Stan example's originals.

    Args:
        folder: holds ``election88.data.json`` (respondents) and ``presvote.dta``
            (state-level Republican vote share 1976-84, ``g76_84pr``).

    Returns:
        The two CSV files: respondents (y, covariates, 1-based state and region, v_prev with
        7 decimals) and the 51 states (abbreviation, region, v_prev, respondent count).
    """
    data = json.loads((folder / "election88.data.json").read_text())
    columns = [data[source] for source in _RESPONDENT_COLUMNS.values()]
    lines = [",".join([*_RESPONDENT_COLUMNS, "v_prev"])]
    for *codes, v_prev in zip(*columns, data["v_prev_full"], strict=True):
        lines.append(",".join(str(int(code)) for code in codes) + f",{v_prev:.7f}")
    full = "\n".join(lines) + "\n"

    vote = pd.read_stata(folder / "presvote.dta")["g76_84pr"].to_numpy()
    counts = np.bincount(np.asarray(data["state"]) - 1, minlength=len(STATE_ABBREVIATIONS))
    lines = ["state,abbr,region,v_prev_g76_84pr,n_respondents"]
    for j, (abbr, region) in enumerate(zip(STATE_ABBREVIATIONS, STATE_REGIONS, strict=True)):
        lines.append(f"{j + 1},{abbr},{region},{vote[j]:.7f},{counts[j]}")
    states = "\n".join(lines) + "\n"
    return {"election88_full.csv": full.encode(), "election88_states.csv": states.encode()}


def frey_faces(folder: Path) -> dict[str, bytes]:
    """``frey_rawface.npy``: ``loadmat("frey_rawface.mat")["ff"].T``, (1965, 560) uint8.

    Args:
        folder: holds ``frey_rawface.mat`` (variable ``ff``, (560, 1965), one column a frame).

    Returns:
        The .npy file, one row per frame (frame i is ``X[i].reshape(28, 20)``).
    """
    frames = scipy.io.loadmat(folder / "frey_rawface.mat")["ff"].T
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(frames))
    return {"frey_rawface.npy": buffer.getvalue()}
