package podset

// +kubebuilder:rbac:groups=fieldops.dev,resources=podsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=podsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=podsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
