/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package podset reconciles PodSets: pods run directly, named
// <podset>-<ordinal> and owned by the PodSet. A change of the template's
// labels or annotations is applied to the running pods in place with
// Server-Side Apply under the PodSet's field manager
// ("fieldops-podset/<namespace>/<name>"): additions, changes and removals of
// its own keys, while keys other managers own stay. Only a change of
// template.spec (its revision) recreates pods, at most maxUnavailable
// unready at a time. With the InPlacePodMetadata gate off every change
// recreates pods, as Strimzi's StrimziPodSet did by hashing the whole pod.
package podset
