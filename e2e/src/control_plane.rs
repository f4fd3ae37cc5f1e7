//! etcd + kube-apiserver (and optionally kube-controller-manager, kube-scheduler, kwok) on loopback.
