{{- define "glyphoxa.labels" -}}
app.kubernetes.io/name: glyphoxa
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "glyphoxa.selector" -}}
app.kubernetes.io/name: glyphoxa
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
