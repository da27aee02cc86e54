"""Amazon Mechanical Turk and any server speaking its API: the provider (:mod:`.provider`), its client
(:mod:`.client`, boto3) and HTMLQuestion/answer XML (:mod:`.mturk_xml`), requester chores outside a
batch's life cycle (:mod:`.services`). MTurk answers are read HIT by HIT: it plugs in no hook.
"""
