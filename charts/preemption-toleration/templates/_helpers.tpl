{{/* The labels of one component's objects and pods: `include "ptol.labels" (list . "webhook")`. */}}
{{- define "ptol.selector" -}}
app.kubernetes.io/name: preemption-toleration
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Labels Helm installs add to every object (kept out of selectors, which cannot change). */}}
{{- define "ptol.release" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "ptol.labels" -}}
{{ include "ptol.selector" . }}
{{ include "ptol.release" (index . 0) }}
{{- end }}

{{- define "ptol.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The operator's identity: the webhooks let it change the annotations it manages. */}}
{{- define "ptol.operatorIdentity" -}}
system:serviceaccount:{{ .Release.Namespace }}:operator
{{- end }}

{{- define "ptol.webhookDNSName" -}}
preemption-toleration-webhook.{{ .Release.Namespace }}.svc
{{- end }}

{{/* Scheduling shared by both components' pods. */}}
{{- define "ptol.podScheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* cert-manager's CA injection, on each webhook configuration in cert-manager mode. */}}
{{- define "ptol.caInjection" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/preemption-toleration-webhook
{{- end }}
{{- end }}
