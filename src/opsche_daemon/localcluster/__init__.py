"""A real Kubernetes control plane on 127.0.0.1, built from Go modules and run as local processes.

This is user tooling beside the daemon (nothing in the daemon imports it): ``opsche cluster
build|up|status|down`` and the integration-test fixture use it. It runs the real etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and kwok, never a fake API, because
opsche's behaviour and its comparison with kube-scheduler are only worth something against them.
"""
