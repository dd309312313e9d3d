"""kube-scheduler's default plugins, one module each, with upstream names and semantics."""
