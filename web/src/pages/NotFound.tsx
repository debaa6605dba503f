import { Page } from '../components/Page.tsx';

export function NotFound(_props: { default?: boolean; path?: string }) {
  return (
    <Page title="Page not found">
      <p>
        There is no page at this address. <a href="/">Go to the home page</a>.
      </p>
    </Page>
  );
}
