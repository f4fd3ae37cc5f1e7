//! Nothing in the environment leaves loopback: every socket of every component is on 127.0.0.0/8.

use olm_e2e::sockets;

#[tokio::test]
async fn every_component_listens_and_talks_on_loopback_only() {
    let env = olm_e2e::shared().await;
    // Make the components busy first, so their client connections exist while we look.
    let client = env.client().await;
    let _ = client.apiserver_version().await.unwrap();
    let components = env.control_plane.components();
    assert!(components.iter().any(|c| c.name == "etcd"));
    assert!(components.iter().any(|c| c.name == "kube-apiserver"));
    let mut violations = Vec::new();
    for component in &components {
        let sockets = sockets::of_process(component.pid).unwrap();
        let listening = sockets.iter().filter(|s| s.is_listening()).count();
        match component.name.as_str() {
            // Client and peer ports.
            "etcd" => assert_eq!(listening, 2, "etcd sockets: {sockets:?}"),
            "kube-apiserver" => assert_eq!(listening, 1, "apiserver sockets: {sockets:?}"),
            // The others serve nothing (`--secure-port=0`, no kwok server address).
            other => assert_eq!(listening, 0, "{other} listens: {sockets:?}"),
        }
        for socket in sockets {
            if !socket.is_loopback_only() {
                violations.push(format!(
                    "{} (pid {}): {socket:?}",
                    component.name, component.pid
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "sockets off loopback:\n{}",
        violations.join("\n")
    );
}

#[tokio::test]
async fn the_kubernetes_service_gets_a_loopback_cluster_ip() {
    use k8s_openapi::api::core::v1::Service;
    let env = olm_e2e::shared().await;
    let services: kube::Api<Service> = kube::Api::namespaced(env.client().await, "default");
    let kubernetes = services.get("kubernetes").await.unwrap();
    let ip: std::net::IpAddr = kubernetes
        .spec
        .unwrap()
        .cluster_ip
        .unwrap()
        .parse()
        .unwrap();
    assert!(ip.is_loopback(), "Service IP {ip} is outside 127.0.0.0/8");
}
