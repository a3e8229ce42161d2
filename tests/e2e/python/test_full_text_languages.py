"""Full-text languages through the Python SDK: a path of a container's full-text policy is cut
into the stems of its language (`language`, else `defaultLanguage`), so a Spanish or French
plural finds its singular there, while an English path does not; FullTextScore ranks with the
same stems."""

from azure.cosmos import PartitionKey

from conftest import unique_id


def container_with(database, policy):
    return database.create_container(unique_id("lang"), PartitionKey(path="/pk"), full_text_policy=policy,
                                      indexing_policy={"fullTextIndexes": [{"path": path["path"]}
                                                                           for path in policy["fullTextPaths"]]})


def ids(container, query, parameters=None):
    return sorted(row["id"] for row in container.query_items(query, parameters=parameters,
                                                             enable_cross_partition_query=True))


def test_each_path_is_stemmed_in_its_language(database):
    container = container_with(database, {"defaultLanguage": "es-ES", "fullTextPaths": [
        {"path": "/es"}, {"path": "/fr", "language": "fr-FR"}, {"path": "/en", "language": "en-US"}]})
    sentence = {"es": "Las demostraciones en español", "fr": "Des démonstrations en français",
                "en": "Las demostraciones en español"}
    container.create_item({"id": "a", "pk": "p", **sentence})
    container.create_item({"id": "b", "pk": "p", "es": "nada", "fr": "rien", "en": "nothing"})
    assert ids(container, "SELECT c.id FROM c WHERE FullTextContains(c.es, 'demostración')") == ["a"]
    assert ids(container, "SELECT c.id FROM c WHERE FullTextContains(c.fr, @term)",
               [{"name": "@term", "value": "démonstration"}]) == ["a"]
    assert ids(container, "SELECT c.id FROM c WHERE FullTextContains(c.en, 'demostración')") == [], \
        "English stems keep the Spanish plural apart"
    ranked = list(container.query_items(
        "SELECT TOP 2 c.id FROM c ORDER BY RANK FullTextScore(c.es, 'demostración')", partition_key="p"))
    assert [row["id"] for row in ranked][0] == "a"
