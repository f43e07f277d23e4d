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

{{/* guard.preemptorIdentities as the items of a CEL list of strings (quotes and backslashes escaped;
the schema refuses control characters). */}}
{{- define "ptol.celIdentities" -}}
{{- range $i, $identity := .Values.guard.preemptorIdentities }}{{ if $i }}, {{ end }}'{{ $identity | replace "\\" "\\\\" | replace "'" "\\'" }}'{{ end }}
{{- end }}

{{/* The flags the guard's configuration must agree with come from their own values, never extraArgs. */}}
{{- define "ptol.checkExtraArgs" -}}
{{- range .Values.webhook.extraArgs }}
{{- if or (hasPrefix "--preemptor-identity" .) (hasPrefix "--eviction-preemptor-priority" .) }}
{{- fail (printf "webhook.extraArgs: %s must agree with the guard's matchConditions: set guard.preemptorIdentities or guard.evictionPreemptorPriority instead" .) }}
{{- end }}
{{- if hasPrefix "--steering" . }}
{{- fail (printf "webhook.extraArgs: %s must agree with the webhook server's rights: set guard.steering instead" .) }}
{{- end }}
{{- end }}
{{- if and (ne .Values.guard.steering "off") (not .Values.guard.enabled) }}
{{- fail "guard.steering acts on the guard's refusals: it needs guard.enabled=true" }}
{{- end }}
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
