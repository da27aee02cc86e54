"""Prolific's Task Builder: Prolific hosts the labelling task, so a lab runs a paid study with no public
site of its own (:mod:`.provider`, :mod:`.client`). Its study is a Prolific study, which Prolific's
webhooks follow (``platforms.prolific.webhooks.STUDY_PROVIDERS``): it plugs in no hook of its own.
"""
