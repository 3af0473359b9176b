"""REST API routes (issue #6 fills these in)."""
from django.urls import path

urlpatterns: list = []
