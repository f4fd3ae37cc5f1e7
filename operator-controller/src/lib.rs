//! operator-controller: resolution, bundle rendering and the ClusterExtension controller.
