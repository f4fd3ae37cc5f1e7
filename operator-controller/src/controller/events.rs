//! Kubernetes Events about ClusterExtensions (`kubectl describe clusterextension`, `kubectl get
//! events`): today one `UpdateAvailable` Event per bundle version newly listed in
//! `status.availableUpdates`.
//!
//! Input: the extension and the Event's reason and note. Output: an `events.k8s.io/v1` Event
//! (cluster-scoped objects' Events go to the `default` namespace, as kube-runtime and
//! client-go place them). Network: the Kubernetes API. A failure is logged, never returned: an
//! Event is information, not state.

use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use olm_api::v1::ClusterExtension;

/// The reporting controller's name.
pub const REPORTER: &str = "operator-controller";

/// Publishes one Normal Event about `extension`.
pub async fn publish(
    client: &kube::Client,
    extension: &ClusterExtension,
    reason: &str,
    note: &str,
) {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: REPORTER.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        },
    );
    let event = Event {
        type_: EventType::Normal,
        reason: reason.to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: "Resolve".to_owned(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &extension.object_ref(&())).await {
        tracing::warn!(error = %e, reason, "failed to publish an Event");
    }
}
