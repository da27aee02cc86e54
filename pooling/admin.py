from django.contrib import admin

from .models import Collection, Pool, Qrels, QuerySet, Run, WordList

admin.site.register(Collection)
admin.site.register(QuerySet)
admin.site.register(Run)
admin.site.register(Qrels)
admin.site.register(WordList)
admin.site.register(Pool)
