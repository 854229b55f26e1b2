{{/* The manager image: repository@digest, or repository:tag (default the chart's appVersion). */}}
{{- define "fieldops.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Labels of config/manager, and Helm's. */}}
{{- define "fieldops.labels" -}}
app.kubernetes.io/name: fieldops
app.kubernetes.io/component: manager
control-plane: controller-manager
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
