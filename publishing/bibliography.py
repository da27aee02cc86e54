"""The works a paper bundle cites, as BibTeX (pure): ``references.bib`` holds exactly the works the bundle's LaTeX
``\\cite``s (:func:`cited_keys`, :func:`bibtex`), an unknown key an error rather than a silent ``[?]`` in the paper.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from genderbias.datasets import NAMED_SETS

#: key → BibTeX entry (the key is the entry's own). The named data sets' papers are declared
#: with the sets (:data:`genderbias.datasets.NAMED_SETS`: their cards cite them too).
ENTRIES: dict[str, str] = {
    **{named.citation_key: named.citation for named in NAMED_SETS.values()},
    "abolghasemi2024": """@inproceedings{abolghasemi2024,
  author    = {Amin Abolghasemi and Leif Azzopardi and Arian Askari and Maarten de Rijke and Suzan Verberne},
  title     = {Measuring Bias in a Ranked List Using Term-Based Representations},
  booktitle = {Advances in Information Retrieval: 46th European Conference on Information Retrieval (ECIR 2024), Part V},
  series    = {Lecture Notes in Computer Science},
  volume    = {14612},
  pages     = {3--19},
  publisher = {Springer},
  address   = {Cham},
  year      = {2024},
  doi       = {10.1007/978-3-031-56069-9_1}
}""",
    "mcsherry2008": """@inproceedings{mcsherry2008,
  author    = {Frank McSherry and Marc Najork},
  title     = {Computing Information Retrieval Performance Measures Efficiently in the Presence of Tied Scores},
  booktitle = {Advances in Information Retrieval: 30th European Conference on IR Research (ECIR 2008)},
  series    = {Lecture Notes in Computer Science},
  volume    = {4956},
  pages     = {414--421},
  publisher = {Springer},
  address   = {Berlin, Heidelberg},
  year      = {2008},
  doi       = {10.1007/978-3-540-78646-7_38}
}""",
    "sapiezynski2019": """@inproceedings{sapiezynski2019,
  author    = {Piotr Sapiezynski and Wesley Zeng and Ronald E. Robertson and Alan Mislove and Christo Wilson},
  title     = {Quantifying the Impact of User Attention on Fair Group Representation in Ranked Lists},
  booktitle = {Companion Proceedings of the 2019 World Wide Web Conference},
  pages     = {553--562},
  publisher = {Association for Computing Machinery},
  address   = {New York, NY, USA},
  year      = {2019},
  doi       = {10.1145/3308560.3317595}
}""",
    "yang2017": """@inproceedings{yang2017,
  author    = {Ke Yang and Julia Stoyanovich},
  title     = {Measuring Fairness in Ranked Outputs},
  booktitle = {Proceedings of the 29th International Conference on Scientific and Statistical Database Management},
  pages     = {22:1--22:6},
  publisher = {Association for Computing Machinery},
  address   = {New York, NY, USA},
  year      = {2017},
  doi       = {10.1145/3085504.3085526}
}""",
    "bajaj2016": """@misc{bajaj2016,
  author  = {Payal Bajaj and Daniel Campos and Nick Craswell and Li Deng and Jianfeng Gao and Xiaodong Liu and Rangan Majumder and Andrew McNamara and Bhaskar Mitra and Tri Nguyen and Mir Rosenberg and Xia Song and Alina Stoica and Saurabh Tiwary and Tong Wang},
  title   = {{MS MARCO}: A Human Generated {MAchine} {Reading} {COmprehension} Dataset},
  year    = {2016},
  eprint  = {1611.09268},
  archivePrefix = {arXiv},
  primaryClass  = {cs.CL},
  doi     = {10.48550/arXiv.1611.09268}
}""",
    "krippendorff2018": """@book{krippendorff2018,
  author    = {Klaus Krippendorff},
  title     = {Content Analysis: An Introduction to Its Methodology},
  edition   = {Fourth},
  publisher = {SAGE Publications},
  address   = {Thousand Oaks, CA},
  year      = {2018},
  doi       = {10.4135/9781071878781},
  note      = {The DOI is the fourth edition's online version (Sage Research Methods)}
}""",
    "dawid1979": """@article{dawid1979,
  author  = {A. P. Dawid and A. M. Skene},
  title   = {Maximum Likelihood Estimation of Observer Error-Rates Using the {EM} Algorithm},
  journal = {Journal of the Royal Statistical Society. Series C (Applied Statistics)},
  volume  = {28},
  number  = {1},
  pages   = {20--28},
  year    = {1979},
  doi     = {10.2307/2346806}
}""",
    "wilson1927": """@article{wilson1927,
  author  = {Edwin B. Wilson},
  title   = {Probable Inference, the Law of Succession, and Statistical Inference},
  journal = {Journal of the American Statistical Association},
  volume  = {22},
  number  = {158},
  pages   = {209--212},
  year    = {1927},
  doi     = {10.1080/01621459.1927.10502953}
}""",
    "holm1979": """@article{holm1979,
  author  = {Sture Holm},
  title   = {A Simple Sequentially Rejective Multiple Test Procedure},
  journal = {Scandinavian Journal of Statistics},
  volume  = {6},
  number  = {2},
  pages   = {65--70},
  year    = {1979},
  url     = {https://www.jstor.org/stable/4615733}
}""",
    "student1908": """@article{student1908,
  author  = {{Student}},
  title   = {The Probable Error of a Mean},
  journal = {Biometrika},
  volume  = {6},
  number  = {1},
  pages   = {1--25},
  year    = {1908},
  doi     = {10.2307/2331554}
}""",
    "efron1979": """@article{efron1979,
  author  = {Bradley Efron},
  title   = {Bootstrap Methods: Another Look at the Jackknife},
  journal = {The Annals of Statistics},
  volume  = {7},
  number  = {1},
  pages   = {1--26},
  year    = {1979},
  doi     = {10.1214/aos/1176344552}
}""",
    "kendall1945": """@article{kendall1945,
  author  = {M. G. Kendall},
  title   = {The Treatment of Ties in Ranking Problems},
  journal = {Biometrika},
  volume  = {33},
  number  = {3},
  pages   = {239--251},
  year    = {1945},
  doi     = {10.1093/biomet/33.3.239}
}""",
    "macavaney2022": """@inproceedings{macavaney2022,
  author    = {Sean MacAvaney and Craig Macdonald and Iadh Ounis},
  title     = {Streamlining Evaluation with ir-measures},
  booktitle = {Advances in Information Retrieval: 44th European Conference on Information Retrieval (ECIR 2022)},
  series    = {Lecture Notes in Computer Science},
  volume    = {13186},
  pages     = {305--310},
  publisher = {Springer},
  address   = {Cham},
  year      = {2022},
  doi       = {10.1007/978-3-030-99739-7_38}
}""",
    "cohen1960": """@article{cohen1960,
  author  = {Jacob Cohen},
  title   = {A Coefficient of Agreement for Nominal Scales},
  journal = {Educational and Psychological Measurement},
  volume  = {20},
  number  = {1},
  pages   = {37--46},
  year    = {1960},
  doi     = {10.1177/001316446002000104}
}""",
    "angelopoulos2021ltt": """@misc{angelopoulos2021ltt,
  author  = {Anastasios N. Angelopoulos and Stephen Bates and Emmanuel J. Cand{\\`e}s and Michael I. Jordan and Lihua Lei},
  title   = {Learn then Test: Calibrating Predictive Algorithms to Achieve Risk Control},
  year    = {2021},
  eprint  = {2110.01052},
  archivePrefix = {arXiv},
  primaryClass  = {cs.LG},
  doi     = {10.48550/arXiv.2110.01052}
}""",
    "angelopoulos2023ppiplus": """@misc{angelopoulos2023ppiplus,
  author        = {Anastasios N. Angelopoulos and John C. Duchi and Tijana Zrnic},
  title         = {{PPI++}: Efficient Prediction-Powered Inference},
  year          = {2023},
  eprint        = {2311.01453},
  archivePrefix = {arXiv},
  primaryClass  = {stat.ML},
  doi           = {10.48550/arXiv.2311.01453}
}""",
    "angelopoulos2023ppi": """@article{angelopoulos2023ppi,
  author  = {Anastasios N. Angelopoulos and Stephen Bates and Clara Fannjiang and Michael I. Jordan and Tijana Zrnic},
  title   = {Prediction-Powered Inference},
  journal = {Science},
  volume  = {382},
  number  = {6671},
  pages   = {669--674},
  year    = {2023},
  doi     = {10.1126/science.adi6000}
}""",
}

_CITE = re.compile(r"\\cite[tp]?\*?(?:\[[^\]]*\])*\{([^}]*)\}")


def cited_keys(*texts: str) -> list[str]:
    """The ``\\cite`` keys of ``texts``, in order of first citation, each once."""
    keys: list[str] = []
    for text in texts:
        for group in _CITE.findall(text):
            for key in group.split(","):
                if key.strip() and key.strip() not in keys:
                    keys.append(key.strip())
    return keys


def bibtex(keys: Iterable[str]) -> str:
    """The entries of ``keys`` (in that order); KeyError naming a key without an entry."""
    keys = list(keys)
    unknown = [key for key in keys if key not in ENTRIES]
    if unknown:
        raise KeyError(f"no BibTeX entry for {', '.join(unknown)}")
    return "\n\n".join(ENTRIES[key] for key in keys) + "\n"
