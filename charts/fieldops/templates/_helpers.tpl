{{/* The manager image: repository@digest, or repository:tag (default the chart's appVersion). */}}
{{- define "fieldops.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/*
The labels of every object the chart renders (Helm's best practices,
https://helm.sh/docs/chart_best_practices/labels/). The generated
templates (zz_generated.*) include them too (internal/chartgen). CRDs
(crds/) are not templates: Helm installs them as they are.
*/}}
{{- define "fieldops.labels" -}}
app.kubernetes.io/name: fieldops
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
A manager Deployment's selector (dict "shard" ""): config/manager's for
the main Deployment, immutable since the first release, and for a shard
control-plane=controller-manager-shard with its key, which the main
selector does not match (config/shard).
*/}}
{{- define "fieldops.selectorLabels" -}}
app.kubernetes.io/name: fieldops
{{- if .shard }}
control-plane: controller-manager-shard
sharding.fieldops.dev/key: {{ .shard | quote }}
{{- else }}
control-plane: controller-manager
{{- end }}
{{- end -}}
